"""Block maxima: a matrix drawn smaller than it is keeps each block's maximum.

A map of N × N cells on fewer than N device pixels a side is drawn as the maxima of k × k blocks,
k = maxima_factor(N, pixels per cell), so a lone attention peak, or a small weight among zeros, never
averages or samples away (pyqtgraph's own downsampling averages, and plain scaling samples).
"""
from __future__ import annotations

import math

import pyqtgraph as pg
from PySide6.QtCore import QPointF, QRectF

from explorer.drawing.growing_maxima import GrowingMaxima
from explorer.views.blocks import image_block_max as block_max  # the one reduction; MaximaImage reads it here


def diverging(levels: tuple[float, float]) -> bool:
    """A colour scale centred on 0 (-m to m), whose peaks are the values furthest from 0 on either side."""
    low, high = float(levels[0]), float(levels[1])
    return low < 0.0 < high and math.isclose(-low, high, rel_tol=1e-6)


def maxima_factor(cells: int, pixels_per_cell: float) -> int:
    """k: the smallest block side whose ceil(cells / k) blocks fit in the whole device pixels the side spans,
    so scaling the blocks up to the screen draws every one (scaling down would sample some away)."""
    if pixels_per_cell <= 0 or cells <= 1:
        return 1
    span = max(1, math.floor(cells * pixels_per_cell + 1e-6))
    k = max(1, math.ceil(1.0 / pixels_per_cell - 1e-6))
    while k < cells and -(-cells // k) > span:
        k += 1
    return k


class MaximaImage(pg.ImageItem):
    """An ImageItem that draws an image larger than the device pixels it covers as the maxima of its
    blocks, k = maxima_factor(...) cells a side (again at every zoom and resize):

        drawn[I, J] = max { M[i, j] : i // k_y = I, j // k_x = J }

    (`signed`: the entry furthest from 0, block_max). pyqtgraph's own automatic downsampling averages
    (functions.downsample) and plain scaling samples, so a lone attention peak of 1.0 among 5 × 5 cells
    was drawn as 0.04, and a small weight as nothing; maxima of block maxima are block maxima. `image`
    stays the whole matrix (hover, tests and exports read it). The reduction is `picture`, a plain
    ImageItem drawn in this one's stead over its whole extent (a remainder block shifts it by under a
    device pixel), with its levels, colours and opacity; only pyqtgraph's public calls are used."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.signed = False
        self.factors = (1, 1)                  # (k_x, k_y) of the picture drawn; (1, 1): the image itself
        self.picture = pg.ImageItem(axisOrder=kwargs.get("axisOrder", "row-major"))
        self.picture.setParentItem(self)       # in the image's own coordinates, one unit a cell
        self.picture.setVisible(False)
        self.maxima = GrowingMaxima(block_max)  # a step that only grew the image reduces its new blocks

    def device_factors(self) -> tuple[int, int]:
        """(k_x, k_y): maxima_factor of each side for the device pixels a cell covers now; (1, 1) unseen."""
        if self.image is None or self.image.ndim != 2 or self.image.size == 0:
            return 1, 1
        origin, right, down = (self.mapToDevice(QPointF(*p)) for p in ((0, 0), (1, 0), (0, 1)))
        if origin is None or right is None or down is None:
            return 1, 1
        view = self.getViewWidget()
        ratio = view.devicePixelRatioF() if view is not None else 1.0    # a HiDPI screen has more pixels
        width, height = (math.hypot(p.x() - origin.x(), p.y() - origin.y()) * ratio for p in (right, down))
        return maxima_factor(self.image.shape[1], width), maxima_factor(self.image.shape[0], height)

    def reduce(self, again: bool = False) -> None:
        """Draw the picture for the view as it is now: computed anew where the factors changed (or `again`:
        the image, or its sign, did)."""
        factors = self.device_factors()
        if again:
            self.maxima.changed()
        if factors == self.factors and not again:
            return
        self.factors = factors
        if factors == (1, 1):
            self.picture.setVisible(False)
            self.picture.clear()
        else:
            (k_x, k_y), (rows, cols) = factors, self.image.shape
            self.picture.setImage(self.maxima.reduce(self.image, k_y, k_x, self.signed), autoLevels=False,
                                  levels=self.levels, lut=self.lut)
            self.picture.setRect(QRectF(0, 0, cols, rows))
            self.picture.setVisible(True)
        self.update()

    # ----- pyqtgraph's public calls, followed by the picture ----------------------------------------------
    def setImage(self, *args, **kwargs) -> None:
        super().setImage(*args, **kwargs)
        self.reduce(again=True)

    def clear(self) -> None:
        super().clear()
        self.reduce(again=True)

    def setRect(self, *args) -> None:
        super().setRect(*args)                     # a cell's size on the device changes with it
        self.reduce()

    def setLevels(self, levels, update: bool = True) -> None:
        super().setLevels(levels, update)
        self.picture.setLevels(levels, update)

    def setLookupTable(self, lut, update: bool = True) -> None:
        super().setLookupTable(lut, update)
        self.picture.setLookupTable(lut, update)

    def viewTransformChanged(self) -> None:
        super().viewTransformChanged()
        self.reduce()

    def paint(self, painter, *args) -> None:
        if not self.picture.isVisible():           # else the picture is drawn, over the same extent
            super().paint(painter, *args)
