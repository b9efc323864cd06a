"""Captions shown whole and tables and grids legible in the real window at the 1366x768 launch layout (drive 14):
the head atlas's caption was cut ("induction: highest L18.H6 = 0.889; t") and its list showed 2½ rows; Next token's
"· click a candidate to branch on it" lost "it" once the left column narrowed; the all-heads grid of the bundled
shakespeare-mla model cut its last column's header ("H") at the scroll area's edge and stretched its tiles tall.

Expectation: what a person sees, measured in the window's own pixels. A text is whole when Qt's font metrics of
the widget lay its whole text out within the widget (one line for a label that does not wrap, wrapped at the
widget's width for one that does); a row is in sight when the table's viewport holds it; a tile's size is the grid
ViewBox's own mapping of its cells to device pixels; a column is whole when its tile lies inside the scroll area's
viewport or wholly outside it.
"""
from __future__ import annotations

import pytest
from PySide6.QtCore import QPoint, QPointF, QRect, QSize, Qt
from PySide6.QtGui import QFontMetrics
from PySide6.QtWidgets import QLabel, QWidget

from explorer.app.widgets.text_widgets import WrappedText
from explorer.app.window.learn_placement import open_on_first_start
from tests.app.journey import BUNDLED
from tests.app.layout_probe import plot_boxes
from tests.app.screen_fit import MIN_PLOT_PX, emulated_screen, settle
from tests.app.window_helpers import idle, new_window, opened, step

pytestmark = pytest.mark.usefixtures("store_home")  # the store in the test's folder
LAUNCH = QSize(1366, 768)
MIN_TILE_PX = 48             # a tile of the all-heads grid (test_grid_tile_size)
READABLE_ROWS = 5


@pytest.fixture
def launched(qtbot, tmp_path, dialogs):
    """The window at its launch layout on a 1366x768 screen."""
    with emulated_screen(LAUNCH):
        window = new_window(qtbot, tmp_path)
        open_on_first_start(window, window.settings)               # Learn beside the panels, as at a first start
        settle(0.5)
        yield window
        window.close()


def plain(widget: QWidget) -> str:
    return widget.document.toPlainText() if isinstance(widget, WrappedText) else widget.text()


def shown_whole(widget: QWidget) -> bool:
    """The widget's whole text fits in the widget, laid out by Qt's font metrics as the widget paints it."""
    if isinstance(widget, WrappedText):
        font, (pad_x, pad_y) = widget.document.defaultFont(), widget.PADDING
        room = widget.rect().adjusted(pad_x, pad_y, -pad_x, -pad_y)
        needed = QFontMetrics(font).boundingRect(QRect(0, 0, room.width(), 10_000),
                                                 Qt.TextFlag.TextWordWrap, plain(widget))
        return needed.width() <= room.width() and needed.height() <= room.height() + 1
    assert isinstance(widget, QLabel)
    room = widget.contentsRect()
    if widget.wordWrap():
        needed = widget.fontMetrics().boundingRect(QRect(0, 0, room.width(), 10_000), Qt.TextFlag.TextWordWrap,
                                                   widget.text())
        return needed.height() <= room.height()
    return widget.fontMetrics().horizontalAdvance(widget.text()) <= room.width()


def inside(widget: QWidget, panel: QWidget) -> bool:
    top_left = widget.mapTo(panel, QPoint(0, 0))
    return panel.rect().contains(QRect(top_left, widget.size()))


def raised(qtbot, window, name: str):
    window.docks[name].show()
    window.docks[name].raise_()
    panel = window.docks[name].widget()
    qtbot.waitUntil(panel.isVisible)
    return panel


@pytest.fixture
def atlas(qtbot, launched, tiny):
    """The head atlas raised at the launch layout, its heads scored; the window's size before it was raised."""
    window = launched
    opened(qtbot, window, tiny)
    size = window.size()
    panel = raised(qtbot, window, "atlas")
    idle(qtbot, window, lambda: panel.scores is not None and "highest" in plain(panel.caption))
    settle(0.3)
    return window, panel, size


def test_the_head_atlas_caption_is_whole_at_the_launch_layout(atlas):
    window, panel, size = atlas
    assert shown_whole(panel.caption) and inside(panel.caption, panel), plain(panel.caption)
    assert window.size() == size                                     # the window did not grow for it


def test_the_head_atlas_list_shows_five_rows_and_its_plots_stay_legible(atlas):
    window, panel, size = atlas
    table = panel.table
    assert table.rowCount() >= READABLE_ROWS
    rows = sum(0 <= table.rowViewportPosition(row) and
               table.rowViewportPosition(row) + table.rowHeight(row) <= table.viewport().height()
               for row in range(table.rowCount()))
    assert rows >= READABLE_ROWS
    boxes = [box for box in plot_boxes(window) if box["dock"] == "atlas"]
    assert len(boxes) == 2 and all(min(box["width"], box["height"]) >= MIN_PLOT_PX for box in boxes), boxes
    assert window.size() == size


@pytest.mark.parametrize("column_px", [300, 240])
def test_next_token_s_hint_is_never_cut_when_the_left_column_narrows(qtbot, launched, tiny, column_px):
    window = launched
    opened(qtbot, window, tiny)
    panel = raised(qtbot, window, "next_token")
    for name in ("tokens", "next_token"):                  # the column narrowed, as by dragging its edge
        window.docks[name].setMaximumWidth(column_px)
    settle(0.3)
    label = panel.position_label
    assert abs(panel.width() - column_px) <= 20
    assert "branch" in plain(label)
    assert shown_whole(label) and inside(label, panel), plain(label)


def tile_rect(panel, layer: int, head: int) -> tuple[int, int, int, int]:
    """Tile (layer, head) of the grid, its cells and not its gutters, in the scroll area's viewport pixels."""
    rows, columns = panel.mosaic.tile_px
    view_box, viewport = panel.grid.plot.getViewBox(), panel.grid_scroll.viewport()
    top, left = panel.mosaic.tile_origin(layer, head)       # where the heads wrap, on the layer's next band
    left, top = left - 0.5, top - 0.5                       # cells are centred on their index
    corners = [panel.grid_view.mapTo(viewport, view_box.mapViewToDevice(QPointF(x, y)).toPoint())
               for x, y in ((left, top), (left + columns, top + rows))]
    return corners[0].x(), corners[0].y(), corners[1].x(), corners[1].y()


def test_shakespeare_mla_s_grid_keeps_square_tiles_and_whole_columns(qtbot, launched):
    window = launched
    opened(qtbot, window, BUNDLED / "shakespeare-mla", "To be, or not to be, that is the question:")
    panel = raised(qtbot, window, "attention")
    qtbot.waitUntil(lambda: panel.mosaic is not None and panel.grid_view.isVisible())
    settle(0.5)
    mosaic = panel.mosaic
    viewport = panel.grid_scroll.viewport()
    for when in ("prefill", "three steps"):         # a step's thinner gutters move no column past the edge
        x0, y0, x1, y1 = tile_rect(panel, 0, 0)
        assert 0.8 <= (x1 - x0) / (y1 - y0) <= 1.25, (when, x1 - x0, y1 - y0)
        assert min(x1 - x0, y1 - y0) >= MIN_TILE_PX - 1, when
        for head in range(mosaic.n_heads):
            x0, _, x1, _ = tile_rect(panel, 0, head)
            assert x1 <= viewport.width() or x0 >= viewport.width(), (when, head, x0, x1, viewport.width())
        step(qtbot, window, 3)
        qtbot.waitUntil(lambda: panel.mosaic.tile_shape[1] == window.session.trace.n_tokens)
        settle(0.3)
