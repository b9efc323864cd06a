"""The Residual stream panel's plots: the layer axis ticks whole layers only."""
from __future__ import annotations

from tests.app.test_why_panels import answered, session, tiny  # noqa: F401  (fixtures)


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
