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
        parts = self.stack_in_parts(records, None)
        while True:
            try:
                next(parts)
            except StopIteration as done:
                return done.value

    def stack_in_parts(self, records: Sequence, rows_a_part: int | None):
        """stack() as a generator that appends at most `rows_a_part` rows (None: all) between its yields, and
        returns the stack: an 8,000-token prefill's rows over several turns of the event loop."""
        records = tuple(records)
        if not self._extended_by(records):
            self._records, self._n, self.top = (), 0, 0.0
        for record in records[len(self._records):]:
            rows = self._rows(record)
            if rows is None:
                self._records, self._n = (), 0
                return None
            rows, kept = np.asarray(rows, dtype=np.float32), (self._n, self.top)
            step, whole = rows_a_part or max(1, len(rows)), False
            try:
                for start in range(0, len(rows), step):
                    if start:
                        yield
                    self._append(rows[start: start + step])
                whole = True
            finally:
                if not whole:                      # dropped halfway: the record's rows are not kept
                    self._n, self.top = kept
            self._records += (record,)
        return self._buffer[: self._n]

    def pending(self, records: Sequence) -> int:
        """How many rows stack() would stack anew for `records` (a decoding step's: its new rows)."""
        records = tuple(records)
        start = len(self._records) if self._extended_by(records) else 0
        return sum(len(rows) for rows in map(self._rows, records[start:]) if rows is not None)

    def _extended_by(self, records: tuple) -> bool:
        """`records` begin with the records stacked."""
        kept = self._records
        return len(kept) <= len(records) and all(a is b for a, b in zip(kept, records))

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
        peak = float(np.abs(rows).max()) if rows.size else 0.0
        if not np.isfinite(peak):                  # (NaN or ±inf among them: the finite entries' alone)
            finite = np.abs(rows[np.isfinite(rows)])
            peak = float(finite.max()) if finite.size else 0.0
        self.top = max(self.top, peak)
        self._n = n + k

    def levels(self) -> tuple[float, float]:
        """symmetric_levels of the rows stacked, from the kept max |x|."""
        return symmetric_levels(np.array([self.top], dtype=np.float32))
