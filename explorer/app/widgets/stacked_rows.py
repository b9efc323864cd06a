"""A per-step field of the trace stacked over its steps, kept from one trace to the next.

A decoding step's trace shares every earlier step record with the trace before it, so a view of
E[ids], Q, K or V over 8,000 tokens needs only the new step's rows: they are appended to a buffer
that grows by doubling, and the largest |x| (the colour levels ±max |x|) and each row's ‖x‖₂ are
kept with them. Any other trace (Back, a new prompt, another head) stacks its steps again.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from explorer.drawing.heatmap import symmetric_levels


class StackedRows:
    """rows(record) of each record, concatenated: (T, d) float32, with `top` = max |x| and `norms` (T,)."""

    def __init__(self, rows: Callable[[object], np.ndarray | None]) -> None:
        self._rows = rows
        self._records: tuple = ()
        self._buffer = np.zeros((0, 0), dtype=np.float32)
        self._norms = np.zeros(0, dtype=np.float32)
        self._n = 0
        self.top = 0.0                    # max |x| over the finite entries (0: none yet)

    def stack(self, records: Sequence) -> np.ndarray | None:
        """The rows of `records` (in order) stacked; None where a record has none (the field is not recorded)."""
        records = tuple(records)
        kept = self._records
        if len(kept) > len(records) or any(a is not b for a, b in zip(kept, records)):
            self._records, self._n, self.top = (), 0, 0.0
        for record in records[len(self._records):]:
            rows = self._rows(record)
            if rows is None:
                self._records, self._n = (), 0
                return None
            self._append(np.asarray(rows, dtype=np.float32))
            self._records += (record,)
        return self._buffer[: self._n]

    @property
    def norms(self) -> np.ndarray:
        """‖x_i‖₂ of every row stacked: (T,)."""
        return self._norms[: self._n]

    def _append(self, rows: np.ndarray) -> None:
        n, k = self._n, rows.shape[0]
        if n == 0 or rows.shape[1:] != self._buffer.shape[1:] or n + k > self._buffer.shape[0]:
            n = n if rows.shape[1:] == self._buffer.shape[1:] else 0         # rows of another width start over
            grown = np.empty((max(2 * n, n + k), *rows.shape[1:]), dtype=np.float32)
            norms = np.empty(grown.shape[0], dtype=np.float32)
            if n:
                grown[:n], norms[:n] = self._buffer[:n], self._norms[:n]
            self._buffer, self._norms = grown, norms
        self._buffer[n:n + k] = rows
        self._norms[n:n + k] = np.linalg.norm(rows.reshape(k, -1), axis=1)
        finite = np.abs(rows[np.isfinite(rows)])
        if finite.size:
            self.top = max(self.top, float(finite.max()))
        self._n = n + k

    def levels(self) -> tuple[float, float]:
        """symmetric_levels of the rows stacked, from the kept max |x|."""
        return symmetric_levels(np.array([self.top], dtype=np.float32))
