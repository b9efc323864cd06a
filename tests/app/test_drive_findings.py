"""What a person driving the whole window on a bare X screen saw, fixed, each checked through the real window.

Each test opens the real main window offscreen on the emulated screens of tests/app/conftest.py (`screen`), opens a
model through the real core, and does what the person did. It compares what the window shows with what is true of
the model (its kind from its config.json) or with what the pixels and the font's metrics say, never with a sentence
copied from a panel.
"""
from __future__ import annotations

import json

import pytest

from tests.app.journey import BUNDLED, walk_on_screen
from tests.app.test_window import new_window, store_home  # noqa: F401


@pytest.fixture
def journey(qtbot, tmp_path, screen, dialogs):
    """A person's journey (tests/app/journey.py) through a new main window sized to the emulated `screen`."""
    yield from walk_on_screen(qtbot, tmp_path, screen, dialogs)


def kind_by_config(folder) -> str:
    """"mla", "encoder-decoder" or "decoder", read from the folder's config.json alone."""
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    if config.get("kv_lora_rank"):
        return "mla"
    if config.get("is_encoder_decoder") or any("EncoderDecoder" in name for name in config.get("architectures", ())):
        return "encoder-decoder"
    return "decoder"


@pytest.mark.parametrize("name", ["shakespeare-gqa", "shakespeare-mla", "translate-en-zh"])
def test_the_what_if_tab_says_why_only_what_the_model_is(journey, name):
    """KV lab ▸ What-if: a model trained with MLA, or an encoder-decoder, is told apart by its own sentence; a
    decoder with per-head keys is offered targets and is called neither (the GQA model was called an
    encoder-decoder by a sentence set before its targets arrived)."""
    journey.open(BUNDLED / name, "To be, or not to be")
    panel = journey.raise_panel("kv_lab")
    journey.act("the what-if tab", lambda: panel.tabs.setCurrentIndex(1))
    said, kind = panel.run_summary.text(), kind_by_config(BUNDLED / name)
    assert ("MLA" in said) == (kind == "mla"), f"{name} ({kind}): {said!r}"
    assert ("encoder–decoder" in said) == (kind == "encoder-decoder"), f"{name} ({kind}): {said!r}"
    assert (panel.variant_box.count() > 0) == (kind == "decoder"), f"{name} ({kind}) offers {panel.variant_box.count()}"


def placed_and_drawn(axis) -> tuple[list[str], list[str]]:
    """The labels the axis places along its length (thinned so that none overlaps), and those pyqtgraph draws of
    them: it leaves out a label wider than the axis has room for."""
    from tests.app.test_user_journey_drive import drawn_labels

    length = axis.boundingRect().height() if axis.orientation in ("left", "right") else axis.boundingRect().width()
    levels = axis.tickValues(axis.range[0], axis.range[1], length)
    placed = [text for text in axis.tickStrings(levels[0][1] if levels else [], 1.0, 1.0) if text]
    return placed, [text for text, _width in drawn_labels(axis)]


def test_presentation_fits_the_axes_to_the_larger_font_and_back(journey, tmp_path):
    """View ▸ Presentation: every layer label the all-heads grid places (L0 … L11) is drawn in the larger font, none
    left out for want of width; off again, the grid's layer axis and the map's key axis take back their size."""
    from tests.app.test_user_journey_drive import deep_llama

    journey.open(deep_llama(tmp_path / "deep-llama"), "To be, or not to be")
    panel = journey.raise_panel("attention")
    rows, keys = panel.grid.axes["left"], panel.large.axes["top"]
    before = (rows.boundingRect().width(), keys.boundingRect().height())
    journey.act("View ▸ Presentation", journey.window.menus.presentation.trigger)
    placed, drawn = placed_and_drawn(rows)
    assert "L11" in placed and drawn == placed, f"in Presentation the grid places {placed} and draws {drawn}"
    journey.act("View ▸ Presentation off", journey.window.menus.presentation.trigger)
    assert (rows.boundingRect().width(), keys.boundingRect().height()) == before


def red_ink_columns(widget) -> list[int]:
    """The pixel columns of `widget`, as drawn, that hold red ink (the warning's text)."""
    image = widget.grab().toImage()
    ratio = image.devicePixelRatio()
    columns = set()
    for x in range(image.width()):
        for y in range(image.height()):
            colour = image.pixelColor(x, y)
            if colour.red() - colour.green() > 60 and colour.red() - colour.blue() > 60:
                columns.add(int(x / ratio))
                break
    return sorted(columns)


def test_the_translators_left_out_warning_is_never_cut_at_the_docks_edge(journey):
    """The Tokens panel's warning of the characters the translator's tokenizer leaves out ("T q k" of "The quick
    brown fox", by its tokenizer.json's own round trip) ends inside the dock, elided, with the whole sentence in
    its tooltip; at 1366x768 it was cut at the dock's edge mid-word ("… (3 characters ne")."""
    from tests.app.test_token_text import bundled, not_read

    text = "The quick brown fox"
    tokenizer = bundled("translate-en-zh")
    left_out = not_read(text, tokenizer.decode(tokenizer.encode(text).ids))
    assert left_out
    journey.open(BUNDLED / "translate-en-zh", text)
    panel = journey.raise_panel("tokens")
    warning = panel.dropped
    assert warning.isVisible()
    whole = warning.toolTip()
    assert all(f" {ch}" in whole for ch in left_out), f"the tooltip {whole!r} does not name {left_out!r}"
    assert "the model does not read them" in whole, f"the tooltip is not the whole sentence: {whole!r}"
    ink = red_ink_columns(warning)
    assert ink, "the warning draws nothing"
    assert ink[-1] < warning.width() - 2, \
        f"the warning's text runs to the edge of its {warning.width()} px line (ink up to column {ink[-1]}): cut"
    assert warning.mapTo(panel, warning.rect().topRight()).x() < panel.width()
