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
from PySide6.QtGui import QColor, QPen, QTransform
from PySide6.QtWidgets import QGraphicsRectItem

from explorer.drawing.colours import signed_colormap
from explorer.drawing.heatmap_axes import TokenAxis, symmetric_levels
from explorer.drawing.maxima import MaximaImage, diverging
from explorer.drawing.plot_title import FittingTitle

__all__ = ["Heatmap", "RowLink", "TokenAxis", "symmetric_levels"]   # the axes' names, as before

HIGHLIGHT = QColor("#ff2d55")


class InsetBox(QGraphicsRectItem):
    """A frame drawn inside its rect, its cosmetic pen and a pixel more in from each side: on the rect's edges a
    tile at the map's edge lost the sides there to the view's clip and its frame line, and L0.H0 in the Head atlas
    was framed by a thin left and bottom edge alone (drive21 m7)."""

    def paint(self, painter, option, widget=None) -> None:
        scale = painter.deviceTransform()
        x_px = math.hypot(scale.m11(), scale.m12()) or 1.0         # device pixels per unit, each way
        y_px = math.hypot(scale.m21(), scale.m22()) or 1.0
        inset = self.pen().widthF() / 2 + 1
        rect = self.rect()
        dx, dy = min(inset / x_px, rect.width() / 4), min(inset / y_px, rect.height() / 4)
        painter.setPen(self.pen())
        painter.setBrush(self.brush())
        painter.drawRect(rect.adjusted(dx, dy, -dx, -dy))


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
        self.labelled = tuple(axes)            # the sides given labels: measuring a hidden axis's 8,000 row labels
        # was most of the Q/K/V tab's first raise at a long prompt
        shown = tuple(side in axes for side in ("left", "top", "right", "bottom"))
        self.plot.showAxes(shown, showValues=shown)
        self.plot.getViewBox().setBorder(pg.mkPen(pg.getConfigOption("foreground"), width=1))
        self.plot.hideButtons()
        self.plot.getViewBox().setMouseEnabled(True, True)
        self.image = MaximaImage(axisOrder="row-major")      # reduced by maxima when drawn smaller than it is
        self.image.setTransform(QTransform().translate(-0.5, -0.5))
        self.plot.addItem(self.image)
        self.detail = MaximaImage(axisOrder="row-major")        # exact cells of a zoomed-in long map
        # (up to 1,024 a side: more than the pixels)
        self.detail.setZValue(5)
        self.detail.setVisible(False)
        self.plot.addItem(self.detail)
        self.backdrop = QGraphicsRectItem()                      # hides the blocks under the finer cells, so a
        self.backdrop.setPen(QPen(Qt.PenStyle.NoPen))            # masked cell there is not a block's colour
        self.backdrop.setZValue(4)
        self.backdrop.setVisible(False)
        self.plot.addItem(self.backdrop)
        self.colormap = self.base_colormap = pg.colormap.get(colormap)   # base: a map of values of one sign
        self.image.setColorMap(self.colormap)
        self.detail.setColorMap(self.colormap)
        self._rect: tuple | None = None                # (the image's rect, the matrix's shape)
        self.colorbar = None                 # made with the first data (a plot of its own: 40 ms at start-up)
        self._wants_colorbar = colorbar
        self.row_box = self._box()
        self.col_box = self._box()
        self.tile_box = self._box(InsetBox())      # a tile at the map's edge: all four sides in sight
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
        plot.titleLabel = FittingTitle("", parent=plot)
        plot.layout.addItem(plot.titleLabel, 0, 1)
        plot.setTitle(None)

    # ----- data -------------------------------------------------------------------
    def set_matrix(self, matrix: np.ndarray, levels: tuple[float, float] | None = None,
                   row_labels: Sequence[str] | None = None, col_labels: Sequence[str] | None = None,
                   keep_view: bool = False, extent: tuple[int, int] | None = None, signed: bool = False) -> None:
        """Show `matrix` (NaN is drawn transparent); levels default to its finite range. `signed`: values
        whose sign matters (attention weights, negative under a linear kernel), drawn on the diverging
        colours.signed_colormap when the levels start below 0, on the heatmap's own colour map otherwise.

        `extent` (rows, cols): the real size of a map drawn reduced (block maxima), which the image
        then spans, so the axes, the hover and the highlights count real rows and columns; such a map
        is drawn reduced further by maxima where it has more blocks than the view has pixels. Every map
        drawn smaller than it is shows each block's maximum (MaximaImage), on a diverging scale its entry
        furthest from 0: a peak, or a small weight among zeros, never averages away."""
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
        below_zero = signed and levels[0] < 0.0
        self._use_colormap(signed_colormap(levels) if below_zero else self.base_colormap)
        self.image.signed = self.detail.signed = below_zero or diverging(levels)
        # Block maxima are about a pixel wide: the view's frame, drawn over its first pixel column, hid the
        # first keys' column (an attention sink). Under the map, the frame shows where it has no cells.
        self.plot.getViewBox().borderRect.setZValue(-1.0 if extent is not None else 1e3)
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
        for sides, labels in ((("left", "right"), row_labels), (("top", "bottom"), col_labels)):
            for side in sides:
                if labels is not None and side in self.labelled:
                    self.axes[side].set_labels(labels)
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
        self.base_colormap = colormap
        self._use_colormap(colormap)

    def _use_colormap(self, colormap: pg.ColorMap) -> None:
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

    def _box(self, box: QGraphicsRectItem | None = None) -> QGraphicsRectItem:
        box = QGraphicsRectItem() if box is None else box
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
