"""The KV lab's variant table kept readable in a short dock: its rows as tall as their text, the table
given the height of all its rows before the plots below it take the rest, and, where even that leaves
rows out of sight, a hint that names how many more there are to scroll to.

At 1366×768 the lab sits in a bottom dock a few hundred pixels high; with the table above its plots
(kv_plot.FitSplitter) the two shared that height 2 : 3 and the table showed two of SmolLM2's six rows.
The plots keep their minimum height (three legible plots), so the window never grows for the table.
"""
from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Qt, QTimer
from PySide6.QtWidgets import QHeaderView, QLabel, QSplitter, QTableWidget

RESIZES = (QEvent.Type.Resize, QEvent.Type.Show, QEvent.Type.LayoutRequest)


def hidden_rows(table: QTableWidget) -> list[int]:
    """The rows of `table` not wholly inside its viewport (each must be scrolled to, to be read)."""
    bottom = table.viewport().height()
    return [row for row in range(table.rowCount())
            if table.visualRect(table.model().index(row, 0)).bottom() >= bottom
            or table.visualRect(table.model().index(row, 0)).top() < 0]


class VariantRows(QObject):
    """Keeps the table's rows in sight in `splitter` (table section first, plots second), and `hint` saying
    how many are not."""

    def __init__(self, splitter: QSplitter, table: QTableWidget, hint: QLabel) -> None:
        super().__init__(table)
        self.splitter, self.table, self.hint = splitter, table, hint
        table.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)   # follows the font
        hint.setVisible(False)
        for watched in (splitter, table.viewport()):
            watched.installEventFilter(self)

    def eventFilter(self, watched, event) -> bool:
        if event.type() in RESIZES:
            QTimer.singleShot(0, self, self.fit)          # once Qt has laid the rows and the splitter out
        return super().eventFilter(watched, event)

    def fit(self) -> None:
        """Give the table what its rows lack, down to the plots' minimum height, and say what still is."""
        splitter, table = self.splitter, self.table
        if splitter.orientation() == Qt.Orientation.Vertical and splitter.count() == 2:
            sizes = splitter.sizes()
            lacking = table.verticalHeader().length() - table.viewport().height()
            room = sizes[0] + sizes[1] - splitter.widget(1).minimumSizeHint().height()
            room = max(room, sizes[0])
            wanted = min(sizes[0] + max(lacking, 0), room)
            if wanted != sizes[0] and lacking > 0:
                splitter.setSizes([wanted, sizes[0] + sizes[1] - wanted])
        self.say_hidden()

    def say_hidden(self) -> None:
        hidden = hidden_rows(self.table)
        names = ", ".join(self.table.item(row, 0).text() for row in hidden if self.table.item(row, 0))
        self.hint.setText(f"↓ {len(hidden)} more: scroll the table" if hidden else "")
        self.hint.setToolTip(f"Out of sight: {names}" if hidden else "")
        self.hint.setVisible(bool(hidden))
