"""Marks on a layer x head map for the heads an experiment ablates (O_h <- 0 or its mean): a dashed cross
over each one's cell or tile, so the grid and the atlas show at a glance which heads the model runs without.
"""
from __future__ import annotations

from PySide6.QtCore import QLineF, Qt
from PySide6.QtGui import QColor, QPen
from PySide6.QtWidgets import QGraphicsLineItem

from explorer.core.intervention import active

MARK = QColor("#e63946")


def ablated_heads(experiments, where: str = "self") -> list[tuple[int, int]]:
    """(layer, head) of every head ablated by the experiments that are on, in `where`'s attention."""
    return sorted({(a.layer, a.head) for a in active(experiments).ablations if a.where == where})


class AblationMarks:
    """Dashed crosses over cells of `plot` (a pyqtgraph PlotItem whose cell (r, c) spans c-0.5..c+0.5)."""

    def __init__(self, plot) -> None:
        self.plot = plot
        self.items: list[QGraphicsLineItem] = []
        self.marked: list[tuple[int, int, int, int]] = []      # (top, left, height, width) of each mark

    def show(self, blocks) -> None:
        """Mark each (top, left, height, width) block of cells; an empty list removes every mark."""
        blocks = list(blocks)
        if blocks == self.marked:
            return
        for item in self.items:
            self.plot.removeItem(item)
        self.items, self.marked = [], blocks
        pen = QPen(MARK, 2, Qt.PenStyle.DashLine)
        pen.setCosmetic(True)
        for top, left, height, width in blocks:
            x0, y0, x1, y1 = left - 0.5, top - 0.5, left - 0.5 + width, top - 0.5 + height
            for line in (QLineF(x0, y0, x1, y1), QLineF(x0, y1, x1, y0)):
                item = QGraphicsLineItem(line)
                item.setPen(pen)
                item.setZValue(11)
                self.plot.addItem(item)
                self.items.append(item)
