"""MiniLM's grid (6 layers × 12 heads) in the main window on a 1366×768 screen: squeezed into the width the
Attention dock gives it beside the large map, its tiles were 23 px wide (11 px beside the Learn column). Every
tile keeps at least 48 px each way, and the grid scrolls where it does not fit.

Expectation: a tile's size on screen is the ViewBox's own mapping of its cells to device pixels; 48 px is the
size at which a 19-token tile still gives each token more than 2 px.
"""
from __future__ import annotations

import pytest
from PySide6.QtCore import QPoint, QPointF, QSize, Qt
from PySide6.QtGui import QWheelEvent
from PySide6.QtWidgets import QApplication

from explorer.app.panels.attention import AttentionPanel
from explorer.core import store
from tests.app.smollm2_window import grid_at
from tests.app.synthetic_trace import build_trace

LEAST_TILE_PX = 48
PROMPT = "To be, or not to be, that is the question: whether tis nobler"


def tile_px(panel: AttentionPanel) -> tuple[float, float]:
    """A tile's width and height on screen: its cells mapped through the grid's ViewBox."""
    rows, columns = panel.mosaic.tile_shape
    view_box = panel.grid.plot.getViewBox()
    origin, corner = (view_box.mapViewToDevice(QPointF(*p)) for p in ((0, 0), (columns, rows)))
    return corner.x() - origin.x(), corner.y() - origin.y()


@pytest.mark.realmodel
@pytest.mark.parametrize("screen", [QSize(1366, 768)], ids=["1366x768"])
def test_minilm_grid_tiles_keep_48_px_and_the_grid_scrolls(qtbot, tmp_path, dialogs, screen):
    folder = store.pulled_path("minilm-l6")
    if folder is None:
        pytest.skip("minilm-l6 is not pulled")
    with grid_at(qtbot, tmp_path, folder, PROMPT, screen) as (window, panel):
        trace = window.session.trace
        assert (panel.mosaic.n_layers, panel.mosaic.n_heads) == (6, 12)
        assert panel.mosaic.tile_shape == (trace.n_tokens, trace.n_tokens)

        def legible() -> None:
            assert min(tile_px(panel)) >= LEAST_TILE_PX, tile_px(panel)
        qtbot.waitUntil(legible, timeout=3000)
        width, height = tile_px(panel)
        scroll = panel.grid_scroll
        needed = panel.mosaic.layout.across * width             # the heads a row (they wrap)
        if needed > scroll.viewport().width():               # what does not fit is reached by scrolling
            assert scroll.horizontalScrollBar().maximum() > 0


def test_the_wheel_scrolls_a_grid_that_does_not_fit_and_ctrl_wheel_zooms(open_panel):
    """30 layers of 48 px tiles in a 500 px panel: the wheel over the tiles moves the scroll bar, as over any
    page, and leaves the plot's range alone; Ctrl+wheel zooms the plot as before."""
    trace = build_trace(n_layers=30, n_heads=9, n_kv_heads=3, prompt_len=6, steps=1)
    panel = open_panel(AttentionPanel, trace.model, (900, 500))
    panel.session.set_trace(trace)
    scroll, view = panel.grid_scroll, panel.grid_view
    assert scroll.verticalScrollBar().maximum() > 0                  # 30 × 48 px do not fit in 500
    view_box = panel.grid.plot.getViewBox()
    before = view_box.viewRange()

    def wheel(modifiers) -> None:
        centre = QPointF(view.viewport().width() / 2, min(200, view.viewport().height() / 2))
        event = QWheelEvent(centre, view.viewport().mapToGlobal(centre), QPoint(), QPoint(0, -120),
                            Qt.MouseButton.NoButton, modifiers, Qt.ScrollPhase.NoScrollPhase, False)
        QApplication.sendEvent(view.viewport(), event)

    wheel(Qt.KeyboardModifier.NoModifier)
    assert scroll.verticalScrollBar().value() > 0
    assert view_box.viewRange() == before
    wheel(Qt.KeyboardModifier.ControlModifier)
    assert view_box.viewRange() != before
