"""Nothing is cut at 1366 px: probability bars keep their proportions in a narrow column, and the
residual stream's numbers are shown whole (a scroll bar rather than "0…")."""
from __future__ import annotations

import numpy as np
from PySide6.QtWidgets import QApplication

from explorer.app.panels import NextTokenPanel
from explorer.app.state.session import Session
from tests.app.shared_window import make
from tests.app.synthetic_trace import WORDS, build_trace


def bar_lengths(table, column: int) -> list[int]:
    """How many pixels of the middle line of each row's cell of `column` are inked (unlike the cell's
    background, read at its right edge), off the drawn table."""
    image = table.viewport().grab().toImage()
    lengths = []
    for row in range(table.rowCount()):
        rect = table.visualRect(table.model().index(row, column))
        y = rect.center().y()
        line = [image.pixelColor(x, y) for x in range(rect.left(), rect.right() + 1)]
        ground = image.pixelColor(rect.right() - 1, rect.top() + 1)
        bar = [abs(c.lightness() - ground.lightness()) > 60 for c in line[:-2]]
        lengths.append(int(np.sum(bar)))
    return lengths


def test_probability_bars_are_drawn_to_scale_in_a_narrow_panel(qtbot):
    session = Session()
    session.set_token_display(lambda token_id: WORDS[token_id])
    panel = make(qtbot, session, NextTokenPanel)
    panel.resize(300, 500)                       # a dock's share of a 1366 px screen
    trace = build_trace(prompt_len=5, steps=1)
    session.set_trace(trace)
    QApplication.processEvents()
    probs = np.asarray(trace.steps[-1].top_probs[-1], dtype=float)
    lengths = np.asarray(bar_lengths(panel.table, 4), dtype=float)
    assert lengths[0] >= 10 and len(set(lengths.tolist())) > 1
    expected = lengths[0] * probs / probs[0]
    assert np.all(np.abs(lengths - expected) <= 2.0), (lengths, expected)


def test_the_residual_streams_numbers_are_shown_whole_at_thirty_layers(qtbot):
    from explorer.app.panels.residual import ResidualPanel
    from explorer.core.attribution import ResidualStream

    session = Session()
    session.set_token_display(lambda token_id: WORDS[token_id])
    panel = make(qtbot, session, ResidualPanel)
    panel.resize(683, 240)                       # half a 1366 px screen
    trace = build_trace(n_layers=30, prompt_len=5)
    session.set_trace(trace)
    session.select(token=4)
    n = trace.model.n_layers
    stream = ResidualStream(position=4, attn_norms=np.full(n, 25.31), ffn_norms=np.full(n, 31.7),
                            residual_norms=np.linspace(1.0, 253.7, n), lens_ids=np.ones((n, 5), dtype=np.int64),
                            lens_probs=np.full((n, 5), 0.187))
    panel._on_answer((trace.model.name, tuple(int(i) for i in trace.token_ids[:5])), stream)
    QApplication.processEvents()
    table, metrics = panel.table, panel.table.fontMetrics()
    assert table.columnCount() == n if panel.layers_across else table.rowCount() == n
    cut = [(r, c, table.item(r, c).text()) for r in range(table.rowCount()) for c in range(table.columnCount())
           if table.item(r, c) is not None
           and metrics.horizontalAdvance(table.item(r, c).text()) + 6 > table.columnWidth(c)]
    assert not cut, f"cells cut at their column's width: {cut[:4]}"
    if panel.layers_across:
        assert table.horizontalScrollBar().maximum() > 0         # the layers scroll sideways instead
        viewport = table.viewport().height()
        assert sum(table.rowHeight(r) for r in range(table.rowCount())) <= viewport   # and every row stays in sight
    else:
        assert table.verticalScrollBar().maximum() > 0           # the layers scroll down instead
        viewport = table.viewport().width()
        assert sum(table.columnWidth(c) for c in range(table.columnCount())) <= viewport   # every column in sight


def test_the_attention_panel_fits_a_narrow_dock_with_its_colour_bar_inside(qtbot):
    from explorer.app.panels import AttentionPanel

    session = Session()
    session.set_token_display(lambda token_id: WORDS[token_id])
    panel = make(qtbot, session, AttentionPanel)
    session.set_trace(build_trace(n_layers=2, n_heads=4, prompt_len=40))
    width = 430                                  # the attention dock's share of a 1366 px window
    assert panel.minimumSizeHint().width() <= width, "the panel asks for more than a 1366 px screen's dock"
    panel.resize(width, 560)
    QApplication.processEvents()
    view = panel.large_view
    bar = panel.large.colorbar.mapRectToScene(panel.large.colorbar.boundingRect())
    right = view.mapTo(panel, view.mapFromScene(bar.topRight())).x()
    assert 0 < right <= panel.width(), f"the colour bar ends at {right} px of a {panel.width()} px panel"
    controls = panel.kernel_control.mapTo(panel, panel.kernel_control.rect().topRight()).x()
    assert controls <= panel.width()             # the controls wrap onto another line instead


def test_a_long_maps_title_never_pushes_the_map_and_its_colour_bar_out_of_a_narrow_view(qtbot):
    import pyqtgraph as pg

    from explorer.drawing.heatmap import Heatmap

    n, width = 2048, 253                         # the large map's column in a 1366 px window
    view = pg.GraphicsLayoutWidget()
    qtbot.addWidget(view)
    view.resize(width, 480)
    heatmap = Heatmap(view.ci)
    labels = [f"{i} ␣token" for i in range(n)]
    heatmap.set_matrix(np.random.default_rng(0).random((512, 512)), row_labels=labels, col_labels=labels,
                       extent=(n, n))
    title = f"{n}×{n} in 4×4 block maxima · zoom for exact"
    heatmap.plot.setTitle(title)
    heatmap.plot.setLabels(left="query", top="key")
    view.show()
    qtbot.waitExposed(view)
    view.ci.setGeometry(0, 0, width, 480)
    QApplication.processEvents()
    bar = heatmap.colorbar.mapRectToScene(heatmap.colorbar.boundingRect())
    assert bar.right() <= width and heatmap.plot.sceneBoundingRect().right() <= width + 1, bar
    label = heatmap.plot.titleLabel
    drawn = label.item.mapRectToScene(label.item.boundingRect())
    assert drawn.right() <= width + 1 and label.text == title and label.toolTip() == title
