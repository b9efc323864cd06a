"""A panel's plot titles and table columns after the application's font changes (View ▸ Presentation makes
it FONT_SCALE times larger, for a projector).

pyqtgraph draws a title as rich text in a text item whose font is fixed when the item is made, with a size
in points: in Presentation the tick labels grew and the titles did not. Panels give titles a size relative
to the font instead (TITLE, SMALL_TITLE: CSS keywords that Qt resolves against the item's font as the text
is set), and `fit_to_font` gives every title, and every axis's title, the application's font and sets its
text again. A table's
columns were fitted to their contents in the old font: a column now narrower than its contents is widened
('p' of the next-token table read '0.…').
"""
from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtWidgets import QApplication, QTableView, QWidget

from explorer.drawing.plot_title import TITLE_SIZE, FittingTitle

TITLE = TITLE_SIZE           # a plot's title: a step above the text around it (14 px beside 12)
SMALL_TITLE = "medium"       # a small multiple's or a chart's title beside a map: the text's own size
LEGEND = "small"             # a legend's entries, a step below


def fit_to_font(panel: QWidget) -> None:
    """Every plot title and table column of `panel` fitted to the application's font as it is now."""
    font = QApplication.font()
    for view in panel.findChildren(pg.GraphicsView):
        for item in view.items():
            if isinstance(item, pg.LabelItem) and item.text:
                item.item.setFont(font)
                item.setText(item.text)
            elif isinstance(item, pg.AxisItem) and item.labelText:       # an axis's title ("query", "layer")
                item.label.setFont(font)
                item.setLabel(item.labelText, item.labelUnits, item.labelUnitPrefix, **item.labelStyle)
    for table in panel.findChildren(QTableView):
        widen_columns(table)


def widen_columns(table: QTableView) -> None:
    """Widen each column narrower than its contents or its header's text (the last one, which stretches to
    the edge, left as it is); a column made wider on purpose (a bar's room) stays as wide."""
    header = table.horizontalHeader()
    last = header.count() - 1 if header.stretchLastSection() else header.count()
    for column in range(last):
        needed = max(table.sizeHintForColumn(column), header.sectionSizeHint(column))
        if table.columnWidth(column) < needed:
            table.setColumnWidth(column, needed)


def fitting_title(plot: pg.PlotItem) -> None:
    """Give `plot` a title cut with "…" to the plot's width: pyqtgraph's asks for its whole text's width, and
    "KiB per layer in use (allocated: 12.00 MiB each)" made the figure wider than its column (in Presentation's
    font, the q·k chart's title pushed the chart past its view's right edge)."""
    old = plot.titleLabel
    plot.layout.removeItem(old)
    old.setParentItem(None)
    if old.scene() is not None:
        old.scene().removeItem(old)
    plot.titleLabel = FittingTitle("", parent=plot, size=TITLE)
    plot.layout.addItem(plot.titleLabel, 0, 1)
