"""Heat maps drawn as vector cells in an SVG.

pyqtgraph's SVGExporter writes an ImageItem as an embedded raster the size of the matrix (17 × 17
pixels for 17 tokens), which librsvg draws blurred when scaled up and ImageMagick not at all. While an
SVG is written, each image of at most MAX_VECTOR_CELLS cells is drawn instead as one rectangle per run
of equal colours in a row: sharp at any zoom, and readable by any SVG reader. A larger image stays a
raster (a quarter of a million rectangles would make a file no reader opens comfortably).
"""
from __future__ import annotations

from contextlib import contextmanager

import pyqtgraph as pg
from PySide6.QtCore import QRectF
from PySide6.QtGui import QColor, QImage, QPainter
from PySide6.QtWidgets import QGraphicsItem, QGraphicsPixmapItem

MAX_VECTOR_CELLS = 256 * 256


class VectorCells(QGraphicsItem):
    """The pixels of one image item's rendered picture as filled rectangles, in its coordinates."""

    def __init__(self, image: QImage, width: float, height: float) -> None:
        super().__init__()
        self.picture = image.convertToFormat(QImage.Format.Format_ARGB32)
        self.size = (float(width), float(height))          # the item's extent in its own coordinates

    def boundingRect(self) -> QRectF:
        return QRectF(0, 0, *self.size)

    def paint(self, painter: QPainter, *_args) -> None:
        picture = self.picture
        cell_w, cell_h = self.size[0] / picture.width(), self.size[1] / picture.height()
        painter.setPen(pg.QtCore.Qt.PenStyle.NoPen)
        for y in range(picture.height()):
            for start, stop, rgba in _runs(picture, y):
                if rgba >> 24 == 0:                          # transparent (a masked cell): nothing drawn
                    continue
                painter.fillRect(QRectF(start * cell_w, y * cell_h, (stop - start) * cell_w, cell_h),
                                 QColor.fromRgba(rgba))


def _runs(picture: QImage, y: int):
    """(start, stop, argb) of each run of equal pixels of row y."""
    width, start = picture.width(), 0
    row = [picture.pixel(x, y) for x in range(width)]
    for x in range(1, width + 1):
        if x == width or row[x] != row[start]:
            yield start, x, row[start]
            start = x


def _picture_of(item) -> tuple[QImage, float, float] | None:
    """An image item's picture and its extent in its own coordinates: a heat map (ImageItem) or a colour
    bar's gradient (ColorBarItem draws a QGraphicsPixmapItem)."""
    if not item.isVisible():
        return None
    if isinstance(item, pg.ImageItem):
        if item.image is None:
            return None
        if item.qimage is None:
            item.render()
        return None if item.qimage is None else (item.qimage, item.width(), item.height())
    if isinstance(item, QGraphicsPixmapItem) and not item.pixmap().isNull():
        return item.pixmap().toImage(), item.pixmap().width(), item.pixmap().height()
    return None


@contextmanager
def vector_cells(figure):
    """While inside, every visible image item of `figure` of at most MAX_VECTOR_CELLS pixels is hidden
    and drawn by a VectorCells beside it (same parent, transform and depth)."""
    swapped = []
    for item in figure.scene().items():
        found = _picture_of(item)
        if found is None or found[0].isNull() or found[0].width() * found[0].height() > MAX_VECTOR_CELLS:
            continue
        cells = VectorCells(*found)
        cells.setParentItem(item.parentItem())
        cells.setTransform(item.transform())
        cells.setPos(item.pos())
        cells.setZValue(item.zValue())
        item.setVisible(False)
        swapped.append((item, cells))
    try:
        yield
    finally:
        for item, cells in swapped:
            cells.setParentItem(None)
            if cells.scene() is not None:
                cells.scene().removeItem(cells)
            item.setVisible(True)
