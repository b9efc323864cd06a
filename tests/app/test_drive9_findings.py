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
