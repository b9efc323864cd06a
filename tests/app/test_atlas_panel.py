"""The Atlas panel: its caption counts every head above the floor, not only those listed, and no head is framed
over its empty map while a new model's heads are scored."""
from __future__ import annotations

import numpy as np
from PySide6.QtCore import QSize

from explorer.app.panels import atlas
from tests.app.journey import BUNDLED, journey_in_a_window
from tests.app.why_helpers import answered


def test_the_atlas_caption_counts_every_head_above_the_floor_not_only_those_listed(qtbot, session, traced_llama,
                                                                                   monkeypatch):
    from explorer.core.head_scores import score_heads

    monkeypatch.setattr(atlas, "LISTED", 3)
    loaded, _trace = traced_llama
    panel = answered(qtbot, atlas.AtlasPanel, session, traced_llama)
    qtbot.waitUntil(lambda: panel.values is not None, timeout=5000)
    induction = score_heads(loaded).induction
    floor = float(np.sort(induction, axis=None)[1])          # all but the smallest head qualify
    panel.floor_box.setValue(floor)
    above = int((induction >= panel.floor_box.value()).sum())
    assert above > 3 and panel.table.rowCount() == 3
    assert f"the 3 largest of {above} heads at least" in panel.caption.text(), panel.caption.text()


def test_the_atlas_frames_no_head_over_an_empty_map_while_a_new_model_is_scored(qtbot, tmp_path, monkeypatch):
    """SmolLM2 opened after the translator: while the new model's heads were scored, the atlas's empty map
    kept a red frame where the old model's selected head had been."""
    with journey_in_a_window(qtbot, tmp_path, monkeypatch, QSize(1920, 1080)) as journey:
        journey.open(BUNDLED / "shakespeare-gqa", "To be, or not to be")
        panel = journey.raise_panel("atlas")
        journey.idle("scoring the heads")
        assert panel.values is not None and panel.map.tile_box.isVisible()     # the selected head is framed
        monkeypatch.setattr(panel, "_ask_scores", lambda trace: None)       # the next model's scores take long
        journey.window.session.select(layer=2, head=1)
        journey.open(BUNDLED / "shakespeare-mla", "To be, or not to be")
        assert panel.is_shown() and panel.values is None
        assert not panel.map.tile_box.isVisible(), "a head is framed over the map before any score is drawn"


def test_an_edited_prompt_leaves_the_random_token_scores_current_and_the_texts_out_of_date(qtbot, tmp_path,
                                                                                         monkeypatch):
    """The induction, previous-token and sink scores are measured on the model's own random tokens repeated twice:
    typing in the prompt marked them "Out of date" (drive26). Expectation: the metric's own source (METRICS), a
    score of this text out of date once the text changed, a score of the random tokens current."""
    with journey_in_a_window(qtbot, tmp_path, monkeypatch, QSize(1920, 1080)) as journey:
        journey.open(BUNDLED / "shakespeare-gqa", "To be, or not to be")
        panel = journey.raise_panel("atlas")
        journey.idle("scoring the heads")
        journey.act("a word typed", lambda: journey.window.prompt.set_text("To be, or not to be, that"))
        assert journey.window.session.out_of_date
        for metric in ("induction", "entropy", "sink", "first token"):
            journey.act(f"score {metric}", lambda metric=metric: panel.metric_box.setCurrentText(metric))
            kind, _why = panel.view_state()
            on_random_tokens = "random" in atlas.METRICS[metric][2]
            assert kind == ("trace" if on_random_tokens else "out of date"), (metric, kind)
            assert panel.note.isVisible() == (not on_random_tokens), (metric, panel.note.text())
