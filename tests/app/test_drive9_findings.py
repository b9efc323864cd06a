"""What driving the whole app on bare X screens found at the seams, each checked where a person sees it."""
from __future__ import annotations

import numpy as np

from explorer.app.panels import atlas
from tests.app.test_why_panels import answered, session, tiny  # noqa: F401  (fixtures)


def test_the_atlas_caption_counts_every_head_above_the_floor_not_only_those_listed(qtbot, session, tiny,  # noqa: F811
                                                                                   monkeypatch):
    from explorer.core.head_scores import score_heads

    monkeypatch.setattr(atlas, "LISTED", 3)
    loaded, _trace = tiny
    panel = answered(qtbot, atlas.AtlasPanel, session, tiny)
    qtbot.waitUntil(lambda: panel.values is not None, timeout=5000)
    induction = score_heads(loaded).induction
    floor = float(np.sort(induction, axis=None)[1])          # all but the smallest head qualify
    panel.floor_box.setValue(floor)
    above = int((induction >= panel.floor_box.value()).sum())
    assert above > 3 and panel.table.rowCount() == 3
    assert f"the 3 largest of {above} heads at least" in panel.caption.text(), panel.caption.text()


def test_the_residual_streams_layer_axis_ticks_only_whole_layers(qtbot, session, tiny):  # noqa: F811
    from explorer.app.panels.residual import ResidualPanel

    loaded, trace = tiny
    panel = answered(qtbot, ResidualPanel, session, tiny)
    session.select(token=trace.n_tokens - 1)
    qtbot.waitUntil(lambda: panel.stream is not None, timeout=30000)
    axis = panel.plot.getAxis("bottom")
    low, high = panel.plot.viewRange()[0]
    ticks = [value for _spacing, values in axis.tickValues(low, high, axis.width()) for value in values]
    assert ticks and all(float(value).is_integer() for value in ticks), ticks
    assert {0, loaded.info.n_layers - 1} <= set(ticks), ticks          # the first and the last layer are named


def test_a_cancelled_what_if_leaves_no_progress_words_and_no_blank_maps_after_a_model_switch(qtbot, tmp_path,
                                                                                            monkeypatch):
    """KV lab ▸ What-if on the bundled GQA model, cancelled mid-way, then the MLA model opened: the bar said
    "0% factorising K/V (SVD)" for a model that cannot be converted, above two blank map frames."""
    from PySide6.QtCore import QSize

    from tests.app.journey import BUNDLED, journey_in_a_window

    with journey_in_a_window(qtbot, tmp_path, monkeypatch, QSize(1366, 768)) as journey:
        journey.open(BUNDLED / "shakespeare-gqa", "To be, or not to be, that is")
        lab = journey.raise_panel("kv_lab")
        journey.act("the what-if tab", lambda: lab.tabs.setCurrentIndex(1))
        assert not lab.what_if.maps.isVisibleTo(lab), "blank map frames before any conversion"
        lab.steps_box.setValue(lab.steps_box.maximum())          # long enough to be cancelled on its way
        lab.run_button.click()
        qtbot.waitUntil(lambda: lab.progress.format().startswith("%p% ") and "starting" not in lab.progress.format(),
                        timeout=60000)
        step_words = lab.progress.format()[4:]
        journey.act("cancelling the conversion", lab.cancel_button.click)
        assert step_words not in lab.progress.text(), f"the cancelled run's step stays: {lab.progress.text()!r}"
        journey.open(BUNDLED / "shakespeare-mla", "To be, or not to be, that is")
        journey.raise_panel("kv_lab")
        assert lab.progress.text().strip("0% ") == "", f"the MLA model's bar reads {lab.progress.text()!r}"
        assert not lab.what_if.maps.isVisibleTo(lab), "two blank map frames under 'trained with MLA'"


def test_a_long_map_after_the_translators_encoder_view_is_labelled_query_and_key(qtbot, tmp_path, monkeypatch):
    """The translator's encoder self-attention ("source query" / "source key"), then a decoder whose map is long
    (drawn in blocks): its axes kept the translator's names."""
    from PySide6.QtCore import QSize

    from explorer.views import long_maps
    from tests.app.journey import BUNDLED, journey_in_a_window

    def axis_names(panel) -> tuple[str, str]:
        plot = panel.large.plot
        return plot.getAxis("left").labelText, plot.getAxis("top").labelText

    with journey_in_a_window(qtbot, tmp_path, monkeypatch, QSize(1366, 768)) as journey:
        journey.open(BUNDLED / "translate-en-zh", "The brown fox")
        attention = journey.raise_panel("attention")
        kinds = attention.kind_box.kinds
        journey.act("the encoder's self-attention", lambda: attention.kind_box.combo.setCurrentIndex(
            kinds.index("encoder")))
        assert axis_names(attention) == ("source query", "source key")
        monkeypatch.setattr(long_maps, "STORED_LONG", 16)          # every map of 16 entries or more is long
        journey.open(BUNDLED / "shakespeare-gqa", "To be, or not to be, that is")
        journey.raise_panel("attention")
        journey.idle("the long map")
        assert long_maps.is_long(journey.window.session.trace)
        assert axis_names(attention) == ("query", "key")


def test_tokens_out_of_date_says_it_shows_the_edited_prompts_tokens(qtbot, tmp_path, monkeypatch):
    """An edited prompt: every panel is out of date, but Tokens already shows the new text's tokens; its note
    said only "Out of date", as if the tokens in view were the old ones."""
    from PySide6.QtCore import QSize

    from tests.app.journey import BUNDLED, journey_in_a_window

    with journey_in_a_window(qtbot, tmp_path, monkeypatch, QSize(1366, 768)) as journey:
        window = journey.window
        journey.open(BUNDLED / "shakespeare-gqa", "To be, or not to be")
        tokens = journey.raise_panel("tokens")
        edited = "Now is the winter of our discontent made glorious summer"
        expected = len(window.controller.summary.tokenizer.encode(edited).ids)
        journey.act("editing the prompt", lambda: window.prompt.set_text(edited))
        qtbot.waitUntil(lambda: window.session.out_of_date and window.session.tokens is not None
                        and len(window.session.tokens.ids) == expected, timeout=10000)
        journey.idle("the live tokens")
        assert tokens.table.token_model.rowCount() >= expected
        assert f"the edited prompt's {expected} tokens" in tokens.note.text(), tokens.note.text()


def test_show_the_work_keeps_its_plots_legible_beside_learn_at_1366(qtbot, tmp_path, monkeypatch):
    """With Learn open at 1366 x 768 Show the work's dock is about as tall as wide: its map, chart and text one
    above the other left the map 62 px tall and the chart 56 (journey.act checks every visible plot's size)."""
    from PySide6.QtCore import QSize

    from explorer.app.panels.learn import open_learn
    from tests.app.journey import BUNDLED, journey_in_a_window

    with journey_in_a_window(qtbot, tmp_path, monkeypatch, QSize(1366, 768)) as journey:
        journey.open(BUNDLED / "shakespeare-gqa", "To be, or not to be, that is the question:")
        journey.act("Learn opened", lambda: open_learn(journey.window))
        journey.derive_a_cell()
        derivation = journey.window.docks["derivation"].widget()
        for view in (derivation.view, derivation.products_view):
            box = view.ci.items and view.sceneRect()
            assert view.height() >= 120 and view.width() >= 120, (view.width(), view.height(), box)


def test_kv_lab_does_not_hold_the_window_taller_than_a_1366x768_screen(qtbot, tmp_path, monkeypatch):
    """Every panel raised once, the centre tab group's minimum is its tallest dock's: KV lab's table over its
    three plots asked 521-541 px, and the window, shrunk by hand, could not be less than 741 px tall: more than
    768 less a title bar."""
    from PySide6.QtCore import QSize

    from explorer.app.window.dock_layout import TITLE_BAR_PX
    from tests.app.journey import BUNDLED, journey_in_a_window

    with journey_in_a_window(qtbot, tmp_path, monkeypatch, QSize(1366, 768)) as journey:
        journey.open(BUNDLED / "shakespeare-gqa", "To be, or not to be, that is")
        journey.raise_every_panel()
        lab = journey.raise_panel("kv_lab")
        journey.idle("KV lab")
        for width in (1366, 800):                # full width, and as narrow as the window goes (shrunk by hand)
            journey.window.resize(width, 600)
            journey.idle("resized")
            asked = journey.window.minimumSizeHint()
            assert asked.height() <= 768 - TITLE_BAR_PX, f"{width} px wide, the window asks at least {asked}"
        journey.window.resize(1366, 768 - TITLE_BAR_PX)
        journey.idle("resized back")
        plots = [plot.getViewBox() for plot in lab.plot.plots.values()]
        assert all(min(box.width(), box.height()) >= 120 for box in plots), [box.size() for box in plots]
