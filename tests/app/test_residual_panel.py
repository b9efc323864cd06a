"""The Residual stream panel's plots: the layer axis ticks whole layers only."""
from __future__ import annotations

from tests.app.why_helpers import answered


def test_the_residual_streams_layer_axis_ticks_only_whole_layers(qtbot, session, traced_llama):
    from explorer.app.panels.residual import ResidualPanel

    loaded, trace = traced_llama
    panel = answered(qtbot, ResidualPanel, session, traced_llama)
    session.select(token=trace.n_tokens - 1)
    qtbot.waitUntil(lambda: panel.stream is not None, timeout=30000)
    axis = panel.plot.getAxis("bottom")
    low, high = panel.plot.viewRange()[0]
    ticks = [value for _spacing, values in axis.tickValues(low, high, axis.width()) for value in values]
    assert ticks and all(float(value).is_integer() for value in ticks), ticks
    assert {0, loaded.info.n_layers - 1} <= set(ticks), ticks          # the first and the last layer are named


def test_the_legend_names_the_lines_outside_them_and_goes_with_them(qtbot, session, traced_llama):
    """The legend lay inside the plot's view, over the lines it names (seen walking the Learn path at 1366x768);
    it sits beside the view now, and a stream forgotten leaves no names of lines gone."""
    from explorer.app.panels.residual import ResidualPanel

    loaded, trace = traced_llama
    panel = answered(qtbot, ResidualPanel, session, traced_llama)
    panel.resize(700, 500)
    session.select(token=trace.n_tokens - 1)
    qtbot.waitUntil(lambda: panel.stream is not None, timeout=30000)
    qtbot.waitUntil(lambda: panel.plot.getViewBox().sceneBoundingRect().height() > 0)
    import pyqtgraph as pg

    legends = [item for item in panel.plot_view.scene().items() if isinstance(item, pg.LegendItem)]
    assert len(legends) == 1, legends
    names = [label.text for _sample, label in legends[0].items]
    assert len(names) == 3 and any("attention" in name for name in names), names
    view = panel.plot.getViewBox().sceneBoundingRect()
    legend = legends[0].sceneBoundingRect()
    assert not view.intersects(legend), (view, legend)
    panel.forget()
    assert legends[0].items == []


def test_each_name_in_the_legend_sits_beside_its_lines_sample(qtbot, session, traced_llama):
    """Stretched to the plot's height, the legend's rows spread: each name at the top of its row and each sample in
    the middle, up to 100 px apart in a tall panel (drive23). Expectation: a name's middle within a few px of its
    sample's, in a short panel and a tall one."""
    from explorer.app.panels.residual import ResidualPanel

    loaded, trace = traced_llama
    panel = answered(qtbot, ResidualPanel, session, traced_llama)
    session.select(token=trace.n_tokens - 1)
    qtbot.waitUntil(lambda: panel.stream is not None, timeout=30000)
    for size in ((700, 400), (700, 1000), (600, 300), (1200, 500), (1000, 350)):
        panel.resize(*size)
        qtbot.wait(100)
        qtbot.waitUntil(lambda: panel.plot.getViewBox().sceneBoundingRect().height() > 0)
        apart = [abs(sample.sceneBoundingRect().center().y() - label.item.sceneBoundingRect().center().y())
                 for sample, label in panel.legend.items]
        assert len(apart) == 3 and max(apart) <= 4, (size, apart)
