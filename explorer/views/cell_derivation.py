"""Show the work's cell, derived from the trace: the cell clicked in the selected row (else the row's largest
weight), the head's map around it, and its derivation (explorer.core.derivation). Numpy only, so the panel
derives a long trace's cell off the GUI thread and a short one's at once, by the same function."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from explorer.core import derivation, trace_rows
from explorer.views.long_maps import is_long
from explorer.views.maps import attention_matrix


@dataclass(frozen=True)
class CellAsked:
    """What a derivation is asked for: the head, the step, the selected row, the (token, key) clicked if any,
    the head's output weights if the model thread gave them, and the experiments on."""

    trace: object
    layer: int
    head: int
    upto: int
    position: int
    clicked: tuple | None
    w_o: object
    w_uk: object
    intervention: object

    @property
    def key(self) -> tuple:
        return (id(self.trace), self.layer, self.head, self.upto, self.position, self.clicked, id(self.w_o),
                id(self.w_uk), self.intervention)


@dataclass(frozen=True)
class DerivedCell:
    """A derived cell and the map drawn around it: `matrix` is the head's map (a long trace's: the window of
    rows from `top` and keys from `left`), (row, column) the cell in the trace, `note` the readout's words."""

    asked: CellAsked
    matrix: np.ndarray
    top: int
    left: int
    row: int
    column: int
    windowed: bool
    note: str
    derived: derivation.CellDerivation


def derive(asked: CellAsked) -> DerivedCell:
    """The cell derived: the one clicked in the selected row, else the row's largest weight. Numpy only, so a
    long trace's runs off the GUI thread; its map is the WINDOW x WINDOW cells around the cell, each row one
    weights_row, never T x T."""
    trace, layer, head, upto = asked.trace, asked.layer, asked.head, asked.upto
    windowed = is_long(trace, upto)
    if windowed:
        t = trace_rows.n_keys(trace, upto)
        row = min(asked.position, t - 1)
        column = clicked_column(asked.clicked, row, t)
        if column is None:                                                       # the row's largest weight
            column = int(np.argmax(np.where(trace_rows.mask_row(trace, layer, row, upto),
                                            trace.attention_row(layer, head, row, upto), -np.inf)))
        shown = trace_rows.window(trace, layer, head, row, column, upto)
        matrix, top, left = shown.matrix, shown.top, shown.left
        note = (f"rows {top}–{top + matrix.shape[0] - 1} and keys {left}–{left + matrix.shape[1] - 1} of the "
                f"{shown.extent[0]}×{shown.extent[1]} map, around the cell derived (colours from "
                f"{min(0.0, float(np.nanmin(matrix))):.3g} to {float(np.nanmax(matrix)):.3g}); click any cell to "
                "derive it")
    else:
        matrix, top, left = attention_matrix(trace, layer, head, upto), 0, 0
        row = min(asked.position, matrix.shape[0] - 1)
        column = clicked_column(asked.clicked, row, matrix.shape[1])
        if column is None:                                                       # the row's largest weight
            column = int(np.nanargmax(matrix[row]))
        note = "click any cell of the map to derive it"
    derived = derivation.derive_cell(trace, layer, head, row, column, upto, w_o=asked.w_o, w_uk=asked.w_uk,
                                     intervention=asked.intervention)
    return DerivedCell(asked, matrix, top, left, row, column, windowed, note, derived)


def clicked_column(clicked: tuple | None, row: int, n_columns: int) -> int | None:
    """The key clicked in `row` of a self-attention map (the selection's (token, key)), if the map has it."""
    column = clicked[1] if clicked is not None and clicked[0] == row else None
    return column if column is not None and column < n_columns else None
