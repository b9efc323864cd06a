"""The Next token panel's tables: read-only rows of candidates, the height that keeps a few of them in sight,
and the logit lens, one row a layer and one column a rank, shaded by p: where the answer forms."""
from __future__ import annotations

from collections.abc import Callable

import numpy as np
from PySide6.QtGui import QBrush, QColor, QPalette
from PySide6.QtWidgets import QTableWidget, QTableWidgetItem

from explorer.app.widgets.token_table import fit_row_height


def read_only_table(headers: list[str]) -> QTableWidget:
    """A table of whole rows, one line of the font high, that a person reads and clicks but never edits."""
    table = QTableWidget(0, len(headers))
    table.setHorizontalHeaderLabels(headers)
    table.verticalHeader().setVisible(False)
    table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
    table.setSelectionBehavior(QTableWidget.SelectionBehavior.SelectRows)
    table.horizontalHeader().setStretchLastSection(True)
    fit_row_height(table)
    return table


def chosen_colour(palette: QPalette) -> QColor:
    """The selection colour, faded into the base, so the row's text stays readable in light and dark themes."""
    colour = QColor(palette.color(QPalette.ColorRole.Highlight))
    colour.setAlpha(70)
    return colour


def rows_height(table: QTableWidget, rows: int, scroll_bar_px: int) -> int:
    """The least height that shows `rows` whole rows under the header and a sideways scroll bar `scroll_bar_px`
    high (0 where none shows), rows as tall as its first (the default height of a row before it has any); 0 for no
    rows, asking nothing."""
    row_px = table.rowHeight(0) if table.rowCount() else table.verticalHeader().defaultSectionSize()
    return (table.horizontalHeader().sizeHint().height() + rows * row_px + scroll_bar_px
            + 2 * table.frameWidth() if rows else 0)


def fill_lens(table: QTableWidget, ids: np.ndarray, probs: np.ndarray, name_of: Callable[[int], str],
              shade: QColor) -> int:
    """The logit lens's `ids` and `probs` (layer, rank) in `table`, a cell "token  p" each in `shade`, the likelier
    the darker; the number of ranks, k."""
    k = ids.shape[1] if ids.ndim == 2 else 0
    table.setColumnCount(1 + k)
    table.setHorizontalHeaderLabels(["layer"] + [f"top {rank + 1} (p)" for rank in range(k)])
    table.setRowCount(len(ids))
    for layer, (row_ids, row_probs) in enumerate(zip(ids, probs)):
        table.setItem(layer, 0, QTableWidgetItem(f"L{layer}"))
        for rank, (token_id, p) in enumerate(zip(row_ids, row_probs)):
            item = QTableWidgetItem(f"{name_of(int(token_id))}  {float(p):.3f}")
            colour = QColor(shade)
            colour.setAlpha(int(20 + 160 * float(p)))        # the likelier, the darker: where the answer forms
            item.setBackground(QBrush(colour))
            table.setItem(layer, rank + 1, item)
    table.resizeColumnsToContents()
    return k
