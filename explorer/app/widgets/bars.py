"""A table cell drawn as a bar whose length is a value's share of the cell's width.

A bar written as text ("████") is cut at the cell's edge, so two values whose bars are longer than a
narrow column drew the same length (0.187 and 0.098 at 1366 px). A painted bar scales with the column.
"""
from __future__ import annotations

from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QColor, QPainter
from PySide6.QtWidgets import QStyle, QStyledItemDelegate

SHARE_ROLE = Qt.ItemDataRole.UserRole + 1      # the bar's length, 0..1 of the cell's width
MARGIN = 3                                     # px left clear on each side of the bar
BAR_COLOUR = "#3b7dd8"


def bar_width(cell_width: float, share: float) -> float:
    """The bar's length in px: `share` (clipped to 0..1) of the cell less its margins, at least 1 px."""
    room = max(0.0, cell_width - 2 * MARGIN)
    return max(1.0, room * min(1.0, max(0.0, float(share))))


class ShareBarDelegate(QStyledItemDelegate):
    """Paints SHARE_ROLE as a horizontal bar across the cell (its background and selection as usual)."""

    def paint(self, painter: QPainter, option, index) -> None:
        share = index.data(SHARE_ROLE)
        if share is None:
            super().paint(painter, option, index)
            return
        self.initStyleOption(option, index)
        option.text = ""
        style = option.widget.style() if option.widget is not None else None
        if style is not None:
            style.drawControl(QStyle.ControlElement.CE_ItemViewItem, option, painter, option.widget)
        rect = option.rect
        height = max(2.0, rect.height() * 0.6)
        bar = QRectF(rect.left() + MARGIN, rect.center().y() - height / 2 + 0.5, bar_width(rect.width(), share), height)
        painter.save()
        painter.fillRect(bar, QColor(BAR_COLOUR))
        painter.restore()
