"""A grid of matrices (heatmap PlotItems) that keeps each one legible: as many a row as the width holds with a
MIN_PLOT_PX view each, and a scroll area where the rows need more height than the dock has, rather than
squashing every map to a strip of ticks. The Q / K / V panel draws its Q, K, V (and MLA's c_KV, k_R) and its
projection weights in one each. The Attention panel's grid of every head is one plot of tiles in a TileScroll,
which keeps each tile MIN_TILE_PX a side (a tile of few tokens less: tile_fit).
"""
from __future__ import annotations

import math

import pyqtgraph as pg
from PySide6.QtCore import QEvent, QPoint, QPointF, QRect, QRectF, Qt, QTimer, Signal
from PySide6.QtWidgets import QFrame, QScrollArea, QStyle

from explorer.app.widgets.kv_occupancy import MIN_PLOT_PX
from explorer.app.widgets.tile_fit import heads_per_row, least_tile_px, tile_side
from explorer.views.tile_layout import TileLayout

MATRIX_PX = 260              # a matrix's width in one row: its 120 px view, token labels and colour bar
MATRIX_ROW_PX = 175          # a row's height: its 120 px view, title and column numbers (until one is measured)
REVEAL_MARGIN_PX = 4         # room kept around a tile scrolled into sight, so its outline is not at the edge


class MapGrid(QScrollArea):
    """`view` (a GraphicsLayoutWidget) in a scroll area; `hold(plots)` lays the plots made in `view.ci` out."""

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.view = pg.GraphicsLayoutWidget()
        self.setWidgetResizable(True)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setWidget(self.view)
        self.plots: list = []
        self.per_row: int | None = None             # plots a row as laid out (None: being laid out)
        self._due = False                           # a layout is queued (_later)
        self.viewport().installEventFilter(self)    # laid out again at the scroll area's own resize, which one made
        # while it was hidden (behind a note) reaches only when it is shown again

    def clear(self) -> None:
        self.view.clear()
        self.plots, self.per_row = [], None

    def hold(self, plots: list) -> None:
        """Lay out `plots` (made in view.ci) and again whenever their axes or the width change."""
        self.plots, self.per_row = list(plots), None
        for plot in self.plots:
            plot.getViewBox().sigResized.connect(self._on_plot_resized)       # its axes took their room
        self.arrange()

    def eventFilter(self, watched, event) -> bool:
        if watched is self.viewport() and event.type() == QEvent.Type.Resize:
            self._later()
        return super().eventFilter(watched, event)

    def _on_plot_resized(self, _view) -> None:
        if self.per_row is not None:
            self._later()

    def _later(self) -> None:
        """Lay out once control is back in the event loop: a minimum size set inside the view's own resize
        resized it again within that resize, and the view kept its scene the older, shorter height."""
        if not self._due:
            self._due = True
            QTimer.singleShot(0, self, self._due_now)

    def _due_now(self) -> None:
        self._due = False
        self.arrange()

    def arrange(self) -> None:
        """As many plots a row as the width holds with a MIN_PLOT_PX view each (at least one, at most all), and
        the view at least as tall as their rows: MLA's five Q/K/V maps were 137x84 px in the 614 px dock beside
        the Learn column of a 1366x768 screen, and its four projection weights 42 px wide."""
        plots = self.plots
        if not plots:
            return
        cells = [_cell_px(plot) for plot in plots]
        cell_w, cell_h = max(w for w, _ in cells), max(h for _, h in cells)
        layout = self.view.ci.layout
        left, top, right, bottom = layout.getContentsMargins()
        across, down = layout.horizontalSpacing(), layout.verticalSpacing()
        room = self.viewport().width() - left - right + across
        per_row = max(1, min(len(plots), int(room // (cell_w + across))))
        rows = -(-len(plots) // per_row)
        self.view.setMinimumSize(math.ceil(left + right + per_row * cell_w + (per_row - 1) * across),
                                 math.ceil(top + bottom + rows * cell_h + (rows - 1) * down))
        if per_row == self.per_row:
            return
        self.per_row = None                         # while moved, their views' resizes do not lay them out again
        for plot in plots:
            self.view.ci.removeItem(plot)
        for index, plot in enumerate(plots):
            self.view.ci.addItem(plot, *divmod(index, per_row))
        self.per_row = per_row


def _cell_px(plot) -> tuple[float, float]:
    """The width and height a plot needs for a MIN_PLOT_PX view: its axes, title and colour bar as laid out
    (they grow with the token labels and the font), at least MATRIX_PX by MATRIX_ROW_PX (a plot squeezed
    thinner drops its labels, and measured so would stay squeezed)."""
    view = plot.getViewBox()
    if view.width() <= 0 or view.height() <= 0:
        return MATRIX_PX, MATRIX_ROW_PX
    return (max(MATRIX_PX, MIN_PLOT_PX + plot.width() - view.width() + 2),
            max(MATRIX_ROW_PX, MIN_PLOT_PX + plot.height() - view.height() + 2))


class TileScroll(QScrollArea):
    """`view` (a GraphicsLayoutWidget whose plot draws tiles with one-cell gutters) in a scroll area that scrolls
    where the tiles at their least side (least_tile_px) need more room than it has; with room to spare the tiles
    fill it. A layer's heads that do not fit the width at that side wrap onto rows of `per_row` heads
    (heads_per_row); `wrap_changed(per_row)` when that changes, for the grid to be drawn so (Mosaic.wrap)."""

    wrap_changed = Signal(object)                   # heads a row (None: all in one row)

    def __init__(self, view: pg.GraphicsLayoutWidget, parent=None) -> None:
        super().__init__(parent)
        self.view = view
        self.per_row: int | None = None             # heads a row the tiles were last laid out for
        self._wraps = False                         # whether a layer's heads may wrap (wrap_heads)
        self.setWidgetResizable(True)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setWidget(view)
        self._tiles: tuple | None = None            # (plot, tiles, cells) last asked to fit
        self.axes_px: int | None = None             # the view's width beside its tiles (axes, frame), as last laid out
        self._fitted: tuple | None = None           # (tiles, font, room, cells) the view was last sized for
        self._room: tuple[int, int] | None = None   # the scroll area's size the tiles were last laid out in
        self._squeezed: tuple | None = None         # the view's size against its least, last laid out for
        self._legend_fitted: tuple | None = None
        self._revealed = None                       # the item kept in sight (reveal)
        self._reveal_due = False
        self._by_hand = False                       # scrolled by a person since the last reveal
        self._hand_anchor: QPointF | None = None    # the tiles' point (data) at the viewport's corner, scrolled by hand
        view.viewport().installEventFilter(self)    # the wheel scrolls the tiles (Ctrl+wheel zooms the view)
        for bar in (self.horizontalScrollBar(), self.verticalScrollBar()):
            # a bar's action is a person's scroll (a drag, a click, a key, the wheel); ensureVisible sets its value
            bar.actionTriggered.connect(self._on_scrolled_by_hand)

    def eventFilter(self, watched, event) -> bool:
        """A wheel over the tiles scrolls them where they do not fit, as over any page; with Ctrl held, or with
        nothing to scroll, it goes on to the plot, which zooms."""
        if event.type() == QEvent.Type.Wheel and watched is self.view.viewport() and \
                not event.modifiers() & Qt.KeyboardModifier.ControlModifier and \
                (self.verticalScrollBar().maximum() > 0 or self.horizontalScrollBar().maximum() > 0):
            self.wheelEvent(event)
            return True
        return super().eventFilter(watched, event)

    def fit_tiles(self, plot, tiles: tuple[int, int], cells: tuple[int, int]) -> None:
        """Give `plot`'s view room for `tiles` (layers, heads) of `cells` (rows, columns) each, a one-cell gutter
        between them, the heads `per_row` a row (heads_per_row: SmolLM2's 9 heads showed 3 beside a horizontal
        scroll bar at 1366x768, drive21 m13): square tiles, at least least_tile_px a side, as large as the scroll
        area holds them all, and where even a head a row does not fit, as many whole columns in sight as fit
        (tiles stretched to the room were 48 x 94 px for shakespeare-mla beside Learn at 1366x768, and the scroll
        area's edge cut a column and its header).
        Laid out again when the tiles, the font (View ▸ Presentation: wider axes) or the room change, not at
        every repaint or step."""
        if self._tiles is None or self._tiles[0] is not plot:
            plot.getViewBox().sigResized.connect(self._on_box_resized)
        self._tiles = (plot, tiles, cells)
        self._lay_out()

    def wrap_px(self) -> int | None:
        """The least width at which a layer's heads wrap into a plot of MIN_PLOT_PX (heads_per_row: narrower,
        one row of them scrolls sideways), the vertical scroll bar counted; None until laid out."""
        if self.axes_px is None:
            return None
        return math.ceil(self.axes_px + self.style().pixelMetric(QStyle.PixelMetric.PM_ScrollBarExtent) + MIN_PLOT_PX)

    def wrap_heads(self, on_wrap) -> None:
        """From now on let a layer's heads wrap onto rows of `per_row` (heads_per_row); `on_wrap(per_row)` is called
        whenever that changes, to draw the grid so (Mosaic.wrap(per_row)); the tile kept in sight is revealed
        again after it."""
        self._wraps = True
        self.wrap_changed.connect(on_wrap)
        self._fitted = None
        self._lay_out()

    def reveal(self, item) -> None:
        """Scroll `item` (a QGraphicsRectItem of the view's scene: the selected head's outline) into sight once control
        is back in the event loop, and again whenever the tiles' view is resized (laid out anew, a first raise),
        where they scroll, until the person scrolls by hand: from then a relayout keeps the tiles they scrolled to
        (a resize or a dock moved scrolled back to the selected head), until `reveal` is asked again."""
        self._by_hand, self._hand_anchor = False, None
        self._reveal_later(item)

    def _reveal_later(self, item) -> None:
        self._revealed = item
        if not self._reveal_due:
            self._reveal_due = True
            QTimer.singleShot(0, self, self._reveal_now)

    def _reveal_now(self) -> None:
        self._reveal_due = False
        item = self._revealed
        if self._by_hand or item is None or not item.isVisible() or not self.isVisible():
            return
        # its rect, not its bounding rect: a cosmetic pen's width is counted there in data units, a cell a side
        rect = self._content_rect(item.mapRectToScene(item.rect()))
        if rect.isEmpty():
            return
        layer = self._layer_rect(item.rect().center())
        if layer is not None and layer.height() <= self.viewport().height():
            self._ensure_visible(self._with_labels(layer))      # every head of a wrapped layer, where its bands fit
        self._ensure_visible(self._with_labels(rect))

    def _with_labels(self, rect: QRect) -> QRect:
        """`rect` out to the view's left (top) edge where it fits so: the layers' (heads') labels in sight, as fresh.
        A scroll just far enough to show the tile cut "L0" to ".0" and hid the heads' labels (drive 22)."""
        rect, room = QRect(rect), self.viewport().size()
        if rect.right() + REVEAL_MARGIN_PX < room.width():
            rect.setLeft(0)
        if rect.bottom() + REVEAL_MARGIN_PX < room.height():
            rect.setTop(0)
        return rect

    def _content_rect(self, scene_rect: QRectF) -> QRect:
        """A rect of the view's scene in the view's px, which are the scroll area's content px."""
        view = self.view
        return view.mapFromScene(scene_rect).boundingRect().translated(view.viewport().pos())

    def _ensure_visible(self, rect: QRect) -> None:
        centre = rect.center()
        self.ensureVisible(centre.x(), centre.y(), rect.width() // 2 + REVEAL_MARGIN_PX,
                           rect.height() // 2 + REVEAL_MARGIN_PX)

    def _layer_rect(self, point: QPointF) -> QRect | None:
        """All the tiles of the layer whose tile is at `point` (the tiles' data), where its heads wrap; else None."""
        if self._tiles is None or self.per_row is None:
            return None
        plot, (n_layers, n_heads), cells = self._tiles
        layout = TileLayout(n_layers, n_heads, tuple(cells), self.per_row)
        tile = layout.tile_at(round(point.y()), round(point.x()))
        if tile is None:
            return None
        top, left, height, width = layout.layer_block(tile[0])
        box = plot.getViewBox()
        return self._content_rect(box.mapViewToScene(QRectF(left - 0.5, top - 0.5, width, height)).boundingRect())

    def _corner_point(self) -> QPoint:
        """The viewport's top-left corner in the view's scene."""
        view = self.view
        return QPoint(self.horizontalScrollBar().value(), self.verticalScrollBar().value()) - view.viewport().pos()

    def _on_scrolled_by_hand(self, _action: int) -> None:
        self._by_hand = True                        # a reveal still due is dropped: the person's scroll is later
        QTimer.singleShot(0, self, self._keep_hand_scroll)     # the bar's value is set once its action is done

    def _keep_hand_scroll(self) -> None:
        """Keep, in the tiles' own coordinates, the point a person's scroll left at the viewport's corner."""
        if self._tiles is not None:
            box = self._tiles[0].getViewBox()
            self._hand_anchor = box.mapSceneToView(self.view.mapToScene(self._corner_point()))

    def _scroll_to_hand_anchor(self) -> None:
        if self._hand_anchor is None or self._tiles is None:
            return
        box = self._tiles[0].getViewBox()
        corner = self.view.mapFromScene(box.mapViewToScene(self._hand_anchor)) + self.view.viewport().pos()
        self.horizontalScrollBar().setValue(corner.x())
        self.verticalScrollBar().setValue(corner.y())

    def _on_box_resized(self, box) -> None:
        """An axis grew once its labels were drawn (pyqtgraph sizes them as it paints them), squeezing the view
        under the size its tiles were given: laid out again once control is back in the event loop. The tiles
        moved with the view: the tile kept in sight (reveal) scrolled to again, or those a person scrolled to."""
        if self._by_hand:
            QTimer.singleShot(0, self, self._scroll_to_hand_anchor)
        elif self._revealed is not None:
            self._reveal_later(self._revealed)
        squeezed = (round(box.width() - box.minimumWidth()), round(box.height() - box.minimumHeight()))
        if squeezed != (0, 0) and squeezed != self._squeezed:       # once for each change, never in a loop
            self._squeezed, self._fitted = squeezed, None
            QTimer.singleShot(0, self, self._lay_out)

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self._lay_out()

    def _lay_out(self) -> None:
        if self._tiles is None:
            return
        plot, (n_layers, n_heads), cells = self._tiles
        # A step (more cells, the same tiles and room) is not laid out again: the view would be resized at every
        # step (test_layout_stable). Where the columns scroll, its thinner gutters move the last whole column's
        # edge by under a gutter's change, (1/c - 1/(c+1)) of a tile per column.
        same = ((n_layers, n_heads), self.view.font().toString(), self.size().toTuple(), None)
        if self._fitted == same:
            return
        self._fitted = same
        box = plot.getViewBox()
        least_side = least_tile_px(*cells)
        r, c = TileLayout(n_layers, n_heads, tuple(cells)).tile_px       # its pixels, each gutter one
        bar = self.style().pixelMetric(QStyle.PixelMetric.PM_ScrollBarExtent)
        right = self.view.ci.layout.getContentsMargins()[2] + plot.layout.getContentsMargins()[2]
        for _ in range(2):                       # the axes measured again once the view has its own least size
            plot.layout.invalidate()             # the layouts' size hints are kept until they are asked again
            self.view.ci.layout.invalidate()
            least = self.view.ci.effectiveSizeHint(Qt.SizeHint.MinimumSize)      # the view's and its axes'
            frame = 2 * self.view.frameWidth()        # the view's own frame around its scene
            axes = (least.width() - box.minimumWidth() + frame, least.height() - box.minimumHeight() + frame)
            self.axes_px = axes[0]
            room = (self.width() - axes[0], self.height() - axes[1])
            per_row = heads_per_row(n_layers, n_heads, (r, c), room, bar, least_side) if self._wraps else None
            if per_row is not None:             # a plot narrower than MIN_PLOT_PX is a strip of ticks
                room = (max(room[0], MIN_PLOT_PX), room[1])
            rows, columns = TileLayout(n_layers, n_heads, tuple(cells), per_row).tiles
            span = ((columns * (c + 1) - 1) / c, (rows * (r + 1) - 1) / r)      # the grid in tile sides, gutters too
            side = tile_side(span, columns, c, room, bar, right, least_side)
            box.setMinimumSize(math.ceil(span[0] * side), math.ceil(span[1] * side))
        plot.layout.invalidate()
        self.view.ci.layout.invalidate()
        least = self.view.ci.effectiveSizeHint(Qt.SizeHint.MinimumSize)
        size = (math.ceil(least.width()) + frame, math.ceil(least.height()) + frame)
        self.view.setMinimumSize(*size)
        self.view.setMaximumSize(*size)          # room to spare stays blank: the tiles stay square
        self._bars_as_needed(size, bar)
        self._fitted = same
        self._scroll_home_at_new_room()
        if per_row != self.per_row:
            self.per_row = per_row
            self.wrap_changed.emit(per_row)      # the grid drawn so (fitting its tiles again changes nothing)
            if self._revealed is not None and not self._by_hand:
                self._reveal_later(self._revealed)          # the selected head moved with its tile

    def _scroll_home_at_new_room(self) -> None:
        """In a room of another size, scrolled as fresh at that size: to the top left, then to the head kept in sight,
        unless a person scrolled (kept: _on_box_resized). A shrink to the least size and a regrow left the grid
        scrolled, "L0" cut to ".0" and the heads' labels out of sight (drive 22)."""
        room = self.size().toTuple()
        if room == self._room:
            return
        first, self._room = self._room is None, room
        if first or self._by_hand:
            return
        self.horizontalScrollBar().setValue(0)
        self.verticalScrollBar().setValue(0)
        if self._revealed is not None:
            self._reveal_later(self._revealed)

    def _bars_as_needed(self, size: tuple[int, int], bar: int) -> None:
        """A scroll bar each way only where the view of `size` needs one. Qt keeps bars it showed once while a
        view capped smaller than the viewport (its maximum size: square tiles) fits: the translator's grid beside
        Learn kept both over ~300 px of grey, its last head behind them (drive21 m5)."""
        room = self.maximumViewportSize()
        down = size[1] > room.height()
        across = size[0] > room.width() - (bar if down else 0)
        down = down or size[1] > room.height() - (bar if across else 0)
        policy = Qt.ScrollBarPolicy
        self.setVerticalScrollBarPolicy(policy.ScrollBarAsNeeded if down else policy.ScrollBarAlwaysOff)
        self.setHorizontalScrollBarPolicy(policy.ScrollBarAsNeeded if across else policy.ScrollBarAlwaysOff)

    def fit_beside(self, legend: pg.GraphicsLayoutWidget, labels: tuple[str, ...]) -> None:
        """`legend` (the grid's colour bars, beside the scroll area, in sight however it scrolls) as wide as its
        bars and their `labels` need (laid out again when they change; a bar's numbers widening its axis ask
        for the room themselves)."""
        if labels != self._legend_fitted:
            self._legend_fitted = labels
            legend.ci.layout.invalidate()
        width = math.ceil(legend.ci.effectiveSizeHint(Qt.SizeHint.PreferredSize).width())
        if width != legend.width():
            legend.setFixedWidth(width)
