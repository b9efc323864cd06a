"""A labelled matrix view, built the way pyqtgraph's MatrixDisplayExample builds one.

`ImageItem` in row-major order inside a `PlotItem` with inverted y, the pixel
centres on integer coordinates, token tick labels that thin out as the view
zooms out, a `ColorBarItem`, hover mapped through the `ViewBox` (crosshair.py),
and rectangles that highlight the selected row and column.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QFont, QFontMetricsF, QPen, QTransform
from PySide6.QtWidgets import QGraphicsRectItem

HIGHLIGHT = QColor("#ff2d55")
MAX_UPRIGHT_PX = 90          # the tallest a top or bottom axis of upright token labels grows (default font)
BASE_LINE_PX = 14.0          # the default font's line height, which the sizes above are for
SHORT_LABEL = 3              # characters a label may have and still be written across (numbers, "H5")


class TokenAxis(pg.AxisItem):
    """An axis whose ticks are labels at given positions, thinned so that they never overlap.

    A top or bottom axis writes its labels upright (rotated 90°), as matrix plots do: a label then
    takes one line height of the axis, as on the left axis, so the key axis labels as many tokens
    as the query axis instead of the few whose full width fits side by side."""

    def __init__(self, orientation: str, **kwargs) -> None:
        super().__init__(orientation, **kwargs)
        self._labels: list[str] = []
        self._positions = np.zeros(0)
        self._lookup: dict[float, int] = {}
        self._longest = 1
        self.setStyle(tickLength=-3, autoExpandTextSpace=True)
        self.enableAutoSIPrefix(False)

    def set_labels(self, labels: Sequence[str], positions: Sequence[float] | None = None) -> None:
        """Ticks at `positions` (default 0, 1, 2, ...); the same labels again change nothing, so a decoding
        step does not make pyqtgraph lay out and draw an unchanged axis again."""
        labels = [str(label) for label in labels]
        positions = np.arange(len(labels), dtype=float) if positions is None else np.asarray(positions, float)
        if labels == self._labels and np.array_equal(positions, self._positions):
            return
        self._labels, self._positions = labels, positions
        self._lookup = {float(p): i for i, p in enumerate(positions)}      # read at every tick layout
        self._longest = max((len(label) for label in labels), default=1)
        if self.orientation in ("left", "right") and self._labels:
            self._fit_width()
        elif self.upright:
            self._fit_upright()
        self.picture = None
        self.update()

    def setRange(self, mn: float, mx: float) -> None:
        """pyqtgraph lays the axis out and draws it again on every range it is given; the view gives
        the same range again whenever anything in the plot changes (each decoding step)."""
        if [mn, mx] != list(getattr(self, "range", ())):
            super().setRange(mn, mx)

    def tickValues(self, minVal, maxVal, size):
        if not self._labels:
            return []
        lo, hi = sorted((minVal, maxVal))
        visible = np.flatnonzero((self._positions >= lo - 0.5) & (self._positions <= hi + 0.5))
        if visible.size == 0:
            return []
        spacing = (self._positions[-1] - self._positions[0]) / max(1, len(self._positions) - 1) or 1.0
        px_per_label = size / max(hi - lo, 1e-9) * spacing
        stride = int(nice_step(self._needed_px() / max(px_per_label, 1e-9)))
        chosen = visible[visible % stride == 0]
        return [(stride, [float(self._positions[i]) for i in chosen])]

    def tickStrings(self, values, scale, spacing):
        return [self._labels[self._lookup[float(v)]] if float(v) in self._lookup else "" for v in values]

    @property
    def upright(self) -> bool:
        """Labels written upright: those of a top or bottom axis longer than a short number or "H12"."""
        return self.orientation in ("top", "bottom") and getattr(self, "_longest", 0) > SHORT_LABEL

    def _fit_upright(self) -> None:
        """Make a top or bottom axis tall enough for its upright labels and its title (e.g. "key")."""
        self.setStyle(autoExpandTextSpace=False)
        grow = self._line_px() / BASE_LINE_PX                  # a larger font (an export) takes more room
        self.setHeight(int(min(MAX_UPRIGHT_PX * grow, self._char_px() * self._longest + 12 * grow)) + self._title_px())

    def _title_px(self) -> int:
        return int(round(20 * self._line_px() / BASE_LINE_PX)) if self.label.isVisible() else 0

    def _font(self) -> QFont:
        return self.style["tickFont"] or QFont()

    def _line_px(self) -> float:
        return QFontMetricsF(self._font()).height()

    def _char_px(self) -> float:
        """A label character's mean width (6.5 px in the default font)."""
        return QFontMetricsF(self._font()).averageCharWidth() + 0.5

    def set_font(self, font: QFont) -> None:
        """Labels in `font` (an export's, scaled to its size); the axis makes room for them."""
        self.setStyle(tickFont=font)
        self.showLabel(self.label.isVisible())

    def _fit_width(self) -> None:
        """Make a left or right axis wide enough for its labels and its title (e.g. "query") beside them."""
        grow = self._line_px() / BASE_LINE_PX
        self.setWidth(int(min(130 * grow, self._char_px() * self._longest + 16 * grow)) + self._title_px())

    def showLabel(self, show: bool = True) -> None:
        super().showLabel(show)
        if self.upright:
            self._fit_upright()
        elif self.orientation in ("left", "right") and getattr(self, "_labels", None):   # (during __init__: none)
            self._fit_width()

    def _needed_px(self) -> float:
        """Room one label takes along the axis: a line of its font (upright or on a side axis), else its width."""
        if self.orientation in ("left", "right") or self.upright:
            return max(13.0, self._line_px() + 1.0)
        return self._char_px() * self._longest + 8.0

    def generateDrawSpecs(self, p):
        """pyqtgraph's specs, with a label for every tick of an upright axis: pyqtgraph drops a label whose
        width, measured lying down, sticks out of the axis, which cut the first and last keys."""
        specs = super().generateDrawSpecs(p)
        if specs is None or not self.upright or not self._labels:
            return specs
        axis_spec, tick_specs, _ = specs
        ticks = [spec[1].x() for spec in tick_specs]
        levels = self.tickValues(self.range[0], self.range[1], self.boundingRect().width())
        values = levels[0][1] if levels else []
        lo, hi = self.range[0], self.range[1]
        width = self.boundingRect().width()
        text = []
        for value, label in zip(values, self.tickStrings(values, 1.0, 1.0)):
            x = (value - lo) * width / ((hi - lo) or 1.0)
            if ticks and min(ticks) - 0.5 <= x <= max(ticks) + 0.5:
                text.append((QRectF(x - 7, 0, 14, 14), 0, label))      # drawPicture reads only the centre's x
        return axis_spec, tick_specs, text

    def drawPicture(self, p, axisSpec, tickSpecs, textSpecs) -> None:
        """pyqtgraph's drawing, with a top or bottom axis's labels upright, reading bottom to top."""
        if not self.upright:
            super().drawPicture(p, axisSpec, tickSpecs, textSpecs)
            return
        super().drawPicture(p, axisSpec, tickSpecs, [])
        if self.style["tickFont"] is not None:
            p.setFont(self.style["tickFont"])
        p.setPen(self.textPen())
        bounds = self.boundingRect()
        room = bounds.height() - 6 - self._title_px()
        for rect, _flags, text in textSpecs:
            p.save()
            edge = bounds.bottom() - 4 if self.orientation == "top" else bounds.top() + 4
            p.translate(rect.center().x(), edge)
            p.rotate(-90)
            box = QRectF(0, -7, room, 14) if self.orientation == "top" else QRectF(-room, -7, room, 14)
            align = Qt.AlignmentFlag.AlignLeft if self.orientation == "top" else Qt.AlignmentFlag.AlignRight
            p.drawText(box, int(align | Qt.AlignmentFlag.AlignVCenter), text)
            p.restore()


def symmetric_levels(matrix: np.ndarray) -> tuple[float, float]:
    """Colour levels (-m, m) for signed values, m = max |x| over the finite entries (1 when there are none)."""
    finite = np.abs(matrix[np.isfinite(matrix)])
    top = float(finite.max()) if finite.size else 1.0
    return -top or -1.0, top or 1.0


def nice_step(at_least: float) -> float:
    """The smallest 1, 2 or 5 times a power of ten that is at least `at_least`, and at least 1."""
    if at_least <= 1:
        return 1.0
    magnitude = 10.0 ** math.floor(math.log10(at_least))
    return next(m * magnitude for m in (1, 2, 5, 10) if m * magnitude >= at_least)


class FittingTitle(pg.LabelItem):
    """A plot title that never widens its plot: pyqtgraph's asks for its text's width, so a long title
    in a narrow dock pushed the map and its colour bar out past the right edge. This one is cut with an
    ellipsis where it has less room, its whole text in the tooltip."""

    def __init__(self, text: str = "", parent=None, **args) -> None:
        self._whole, self._fitting = "", False
        super().__init__(text, parent=parent, **args)

    def setText(self, text, **args) -> None:
        if not self._fitting:
            self._whole = str(text)
            self.setToolTip(self._whole)
        super().setText(text, **args)
        self._fit()

    def updateMin(self) -> None:
        super().updateMin()
        self.setMinimumWidth(0)                              # the plot, not its title, sets the width
        self._sizeHint[Qt.SizeHint.MinimumSize] = (0, self._sizeHint[Qt.SizeHint.MinimumSize][1])

    def resizeEvent(self, event) -> None:
        self._fit()
        super().resizeEvent(event)

    def _fit(self) -> None:
        """Show as much of the whole text as the label's width holds (LabelItem draws it, styled)."""
        width, text = self.width(), self._whole
        if self._fitting or width <= 0 or not text:
            return
        self._fitting = True
        try:
            shown = text
            super().setText(shown)
            while len(shown) > 1 and self.item.boundingRect().width() > width:
                shown = text[: max(1, int(len(shown) * width / self.item.boundingRect().width()) - 1)]
                super().setText(shown + "…")
        finally:
            self.text, self._fitting = text, False          # `text` stays the whole title, as set


class Heatmap:
    """One matrix in a GraphicsLayout: rows top to bottom, columns left to right.

    `on_hover(row, col)` and `on_click(row, col)` receive matrix indices (or None
    when the pointer leaves the matrix).
    """

    def __init__(self, layout: pg.GraphicsLayout, row: int = 0, col: int = 0, colorbar: bool = True,
                 colormap: str = "viridis", axes: tuple[str, str] = ("left", "top")) -> None:
        self.axes = {side: TokenAxis(side) for side in ("left", "top", "right", "bottom")}
        self.plot = layout.addPlot(row=row, col=col, axisItems=self.axes)
        self._fit_title()
        self.plot.invertY(True)
        self.plot.setDefaultPadding(0.0)
        # Only the labelled axes are shown; the view's border closes the frame (two unlabelled axes
        # were laid out and drawn again at every step, for a line each).
        shown = tuple(side in axes for side in ("left", "top", "right", "bottom"))
        self.plot.showAxes(shown, showValues=shown)
        self.plot.getViewBox().setBorder(pg.mkPen(pg.getConfigOption("foreground"), width=1))
        self.plot.hideButtons()
        self.plot.getViewBox().setMouseEnabled(True, True)
        self.image = pg.ImageItem(axisOrder="row-major")
        self.image.setTransform(QTransform().translate(-0.5, -0.5))
        self.image.setAutoDownsample(True)
        self.plot.addItem(self.image)
        self.detail = pg.ImageItem(axisOrder="row-major")       # exact cells of a zoomed-in long map
        self.detail.setZValue(5)
        self.detail.setVisible(False)
        self.plot.addItem(self.detail)
        self.backdrop = QGraphicsRectItem()                      # hides the blocks under the finer cells, so a
        self.backdrop.setPen(QPen(Qt.PenStyle.NoPen))            # masked cell there is not a block's colour
        self.backdrop.setZValue(4)
        self.backdrop.setVisible(False)
        self.plot.addItem(self.backdrop)
        self.colormap = pg.colormap.get(colormap)
        self.image.setColorMap(self.colormap)
        self.detail.setColorMap(self.colormap)
        self._rect: tuple | None = None                # (the image's rect, the matrix's shape)
        self.colorbar = None                 # made with the first data (a plot of its own: 40 ms at start-up)
        self._wants_colorbar = colorbar
        self.row_box = self._box()
        self.col_box = self._box()
        self.tile_box = self._box()
        self.on_hover: Callable[[int | None, int | None], None] | None = None
        self.on_click: Callable[[int, int], None] | None = None
        self.shape = (0, 0)
        self.highlighted: tuple[int | None, int | None] = (None, None)
        self._connected = False

    def _fit_title(self) -> None:
        """Put a FittingTitle where the plot's own title was."""
        plot, old = self.plot, self.plot.titleLabel
        plot.layout.removeItem(old)
        old.setParentItem(None)
        if old.scene() is not None:
            old.scene().removeItem(old)
        plot.titleLabel = FittingTitle("", parent=plot, size="11pt")
        plot.layout.addItem(plot.titleLabel, 0, 1)
        plot.setTitle(None)

    # ----- data -------------------------------------------------------------------
    def set_matrix(self, matrix: np.ndarray, levels: tuple[float, float] | None = None,
                   row_labels: Sequence[str] | None = None, col_labels: Sequence[str] | None = None,
                   keep_view: bool = False, extent: tuple[int, int] | None = None) -> None:
        """Show `matrix` (NaN is drawn transparent); levels default to its finite range.

        `extent` (rows, cols): the real size of a map drawn reduced (block maxima), which the image
        then spans, so the axes, the hover and the highlights count real rows and columns."""
        matrix = np.asarray(matrix, dtype=np.float32)
        if levels is None:
            finite = matrix[np.isfinite(matrix)]
            levels = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
        if levels[1] <= levels[0]:
            levels = (levels[0], levels[0] + 1e-6)
        shape = tuple(extent) if extent is not None else matrix.shape
        reshaped = shape != self.shape
        self.shape = shape
        self.clear_detail()
        if self._wants_colorbar and self.colorbar is None and matrix.size:
            self.colorbar = pg.ColorBarItem(values=levels, colorMap=self.colormap, interactive=False, width=12)
            self.colorbar.setImageItem(self.image, insert_in=self.plot)
        self.image.setImage(matrix, levels=levels, autoLevels=False)
        rect = (QRectF(-0.5, -0.5, shape[1], shape[0]), matrix.shape) if matrix.size and len(shape) == 2 else None
        if rect is not None and rect != self._rect:         # the image spans the real extent
            self.image.setRect(rect[0])
            self._rect = rect
        if self.colorbar is not None and tuple(self.colorbar.levels()) != tuple(levels):
            self.colorbar.setLevels(levels)          # its axis is laid out and drawn again only on a change
        if row_labels is not None:
            self.axes["left"].set_labels(row_labels)
            self.axes["right"].set_labels(row_labels)
        if col_labels is not None:
            self.axes["top"].set_labels(col_labels)
            self.axes["bottom"].set_labels(col_labels)
        if reshaped or not keep_view:
            self.plot.setRange(xRange=(-0.5, shape[1] - 0.5), yRange=(-0.5, shape[0] - 0.5), padding=0)
        self.highlight(*self.highlighted)
        self._connect_scene()

    def set_detail(self, matrix: np.ndarray, top: int, left: int, block: int = 1) -> None:
        """Draw `matrix` over the reduced map, finer than it: each entry `block` × `block` real cells
        (1: the exact cells), its entry (0, 0) at real (top, left)."""
        self.detail.setImage(np.asarray(matrix, dtype=np.float32), levels=self.image.levels, autoLevels=False)
        rect = QRectF(left - 0.5, top - 0.5, matrix.shape[1] * block, matrix.shape[0] * block)
        self.detail.setRect(rect)
        self.backdrop.setRect(rect)
        self.backdrop.setBrush(pg.mkBrush(self.plot.scene().views()[0].backgroundBrush().color()
                                          if self.plot.scene() and self.plot.scene().views() else "k"))
        self.backdrop.setVisible(True)
        self.detail.setVisible(True)

    def clear_detail(self) -> None:
        if self.detail.isVisible():
            self.detail.setVisible(False)
            self.backdrop.setVisible(False)
            self.detail.clear()

    def visible_cells(self) -> tuple[int, int, int, int]:
        """The rows r0..r1 and columns c0..c1 the view shows, within the matrix."""
        (x0, x1), (y0, y1) = self.plot.getViewBox().viewRange()
        rows, cols = self.shape if len(self.shape) == 2 else (0, 0)
        r0, r1 = max(0, int(math.floor(y0 + 0.5))), min(rows, int(math.ceil(y1 + 0.5)))
        c0, c1 = max(0, int(math.floor(x0 + 0.5))), min(cols, int(math.ceil(x1 + 0.5)))
        return r0, max(r0, r1), c0, max(c0, c1)

    def clear(self, title: str = "") -> None:
        """Show nothing (no image, no labels, `title`): what a view shows once its data is gone."""
        self.image.clear()
        self.clear_detail()
        self.shape = (0, 0)
        for axis in self.axes.values():
            axis.set_labels([])
        self.highlight(None, None)
        self.plot.setTitle(title)

    def set_colormap(self, colormap) -> None:
        """A pyqtgraph ColorMap or its name; the colour bar follows. The same map again changes nothing."""
        colormap = pg.colormap.get(colormap) if isinstance(colormap, str) else colormap
        if colormap is self.colormap or colormap.name == self.colormap.name and colormap.name:
            return
        self.colormap = colormap
        self.detail.setColorMap(self.colormap)
        if self.colorbar is not None:
            self.colorbar.setColorMap(self.colormap)
        else:
            self.image.setColorMap(self.colormap)

    def pixel_color(self, row: int, col: int) -> QColor:
        """The colour the image gives the cell (row, col), read from the rendered QImage."""
        qimage = self.image.qimage
        if qimage is None:
            self.image.render()
            qimage = self.image.qimage
        return QColor.fromRgba(qimage.pixel(col, row))

    # ----- selection ------------------------------------------------------------------
    def highlight(self, row: int | None, col: int | None) -> None:
        """Outline row `row` and column `col` (None hides that outline)."""
        self.highlighted = (row, col)
        n_rows, n_cols = self.shape if len(self.shape) == 2 else (0, 0)
        show_row = row is not None and 0 <= row < n_rows
        show_col = col is not None and 0 <= col < n_cols
        if show_row:
            self.row_box.setRect(QRectF(-0.5, row - 0.5, n_cols, 1))
        if show_col:
            self.col_box.setRect(QRectF(col - 0.5, -0.5, 1, n_rows))
        self.row_box.setVisible(show_row)
        self.col_box.setVisible(show_col)

    def outline(self, top: int, left: int, height: int, width: int) -> None:
        """Outline a block of cells (a tile of the all-heads grid)."""
        self.tile_box.setRect(QRectF(left - 0.5, top - 0.5, width, height))
        self.tile_box.setVisible(True)

    def _box(self) -> QGraphicsRectItem:
        box = QGraphicsRectItem()
        pen = QPen(HIGHLIGHT, 2)
        pen.setCosmetic(True)
        box.setPen(pen)
        box.setZValue(10)
        box.setVisible(False)
        self.plot.addItem(box)
        return box

    # ----- pointer ----------------------------------------------------------------------
    def cell_at(self, scene_pos: QPointF) -> tuple[int, int] | None:
        """The matrix cell under a scene position, through the ViewBox mapping."""
        if not self.plot.getViewBox().sceneBoundingRect().contains(scene_pos):
            return None
        point = self.plot.getViewBox().mapSceneToView(scene_pos)
        row, col = int(round(point.y())), int(round(point.x()))
        if len(self.shape) == 2 and 0 <= row < self.shape[0] and 0 <= col < self.shape[1]:
            return row, col
        return None

    def scene_pos_of(self, row: int, col: int) -> QPointF:
        return self.plot.getViewBox().mapViewToScene(QPointF(col, row))

    def _connect_scene(self) -> None:
        scene = self.plot.scene()
        if self._connected or scene is None:
            return
        scene.sigMouseMoved.connect(self._mouse_moved)
        scene.sigMouseClicked.connect(self._mouse_clicked)
        self._connected = True

    def _mouse_moved(self, scene_pos) -> None:
        if self.on_hover is not None:
            cell = self.cell_at(scene_pos)
            self.on_hover(*(cell if cell else (None, None)))

    def _mouse_clicked(self, event) -> None:
        if event.button() != Qt.MouseButton.LeftButton or self.on_click is None:
            return
        cell = self.cell_at(event.scenePos())
        if cell is not None:
            self.on_click(*cell)


class RowLink:
    """Keeps the rows of several plots in step, in data coordinates: each shows the same row range.

    pyqtgraph's setYLink matches views on screen, so while a layout settles and the plots differ in
    height for a moment it widens their ranges (an empty band above the first row). This copies
    the row range itself, both ways, from whichever plot moved.
    """

    def __init__(self) -> None:
        self.plots: list = []
        self._busy = False

    def set_plots(self, plots: list) -> None:
        for plot in self.plots:
            try:
                plot.getViewBox().sigYRangeChanged.disconnect(self._moved)
            except (RuntimeError, TypeError):        # a plot already cleared away
                pass
        self.plots = list(plots)
        for plot in self.plots:
            plot.getViewBox().sigYRangeChanged.connect(self._moved)

    def _moved(self, view_box, y_range) -> None:
        if self._busy:
            return
        self._busy = True
        try:
            for plot in self.plots:
                if plot.getViewBox() is not view_box:
                    plot.getViewBox().setYRange(*y_range, padding=0)
        finally:
            self._busy = False
