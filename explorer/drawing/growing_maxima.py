"""Block maxima of an image that grows between draws, reduced again only where it changed.

A decoding step adds a row to the embeddings' (T, d) map and a row and a column to an attention map; the
cells already there stay as they were. The image is reduced rows first (maxima.block_max folds whole rows
first too): B = the maxima of each k_r rows, column by column, (⌈T / k_r⌉, C). With B of the old (r, c)
image kept, the new image's B' is B where a block of rows holds old cells only, reduced afresh elsewhere:

    B'[I, j] = B[I, j]                          for I < ⌊r / k_r⌋ and j < c
    B'[I, j] = max over rows of block I of M'   otherwise (the last block row, the new rows and columns)

and the drawn maxima are B' folded k_c columns at a time, a (⌈T / k_r⌉, C) array, small. Maxima of maxima
are maxima; on a signed scale the entry furthest from 0 of the entries furthest from 0 is the block's own
(a tie goes to the positive entry both times). So a step costs a block row, not the whole (T, d) image
(54 ms at 8,000 tokens, several times a step as the view's width changed), and a new width costs the
small fold. "Old cells as they were" is checked, bit for bit, against a copy of the image the kept B came
from: an image that is no extension of it (another trace, a buffer written over) is reduced whole.
Numpy only.
"""
from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable

import numpy as np

KEPT = 4          # row factors kept: a view that goes back to a height it had reduces nothing again


class GrowingMaxima:
    """`reduce(matrix, k_rows, k_cols, signed)`: the full reduction (maxima.block_max, given as `reduce`) of
    the image last given to `changed`, from the rows' maxima kept where the image only grew."""

    def __init__(self, reduce: Callable[..., np.ndarray]) -> None:
        self._reduce = reduce
        self._source: np.ndarray | None = None     # a copy of the image the kept maxima were reduced from,
        self._buffer: np.ndarray | None = None     # the first rows of this one, with room for more rows
        self._stale = True                         # changed() since: compare the image with _source first
        self._kept: OrderedDict = OrderedDict()    # (k_rows, signed) -> (shape reduced at, rows' maxima)

    def changed(self) -> None:
        """The image was set again: the next reduce looks at what grew."""
        self._stale = True

    def reduce(self, matrix: np.ndarray, k_rows: int, k_cols: int, signed: bool = False) -> np.ndarray:
        matrix = np.asarray(matrix, dtype=np.float32)
        if k_rows == 1:                            # nothing to keep: the columns' fold is the whole reduction
            return self._reduce(matrix, 1, k_cols, signed)
        if self._stale:
            self._follow(matrix)
        key = (k_rows, bool(signed))
        kept = self._kept.get(key)
        if kept is not None and kept[0] == matrix.shape:
            rows = kept[1]
        elif kept is not None:
            rows = grown_maxima(self._reduce, kept[1], kept[0], matrix, k_rows, 1, signed)
        else:
            rows = self._reduce(matrix, k_rows, 1, signed)
        self._kept[key] = (matrix.shape, rows)
        self._kept.move_to_end(key)
        while len(self._kept) > KEPT:
            self._kept.popitem(last=False)
        return self._reduce(rows, 1, k_cols, signed)

    def _follow(self, matrix: np.ndarray) -> None:
        """Keep the maxima if `matrix` extends the image they came from, else forget them; copy it (only its
        new rows where it grew by rows: an 8,000 × 576 copy a step cost as much as the reduction saved)."""
        old = self._source
        grew = old is not None and extends(matrix, old)
        if not grew:
            self._kept.clear()
        rows, cols = matrix.shape
        start = old.shape[0] if grew and old.shape[1] == cols else 0          # rows already in the buffer
        if self._buffer is None or self._buffer.shape[1] != cols or self._buffer.shape[0] < rows:
            buffer = np.empty((rows + rows // 8 + 8, cols), dtype=np.float32)  # room for the next steps' rows
            buffer[:start] = self._buffer[:start] if start else buffer[:0]
            self._buffer = buffer
        self._buffer[start:rows] = matrix[start:]
        self._source = self._buffer[:rows]
        self._stale = False


def extends(matrix: np.ndarray, old: np.ndarray) -> bool:
    """Whether `matrix` holds `old` bit for bit in its top-left corner (NaN included): it only grew."""
    if matrix.ndim != 2 or old.ndim != 2 or matrix.shape[0] < old.shape[0] or matrix.shape[1] < old.shape[1]:
        return False
    corner = matrix[: old.shape[0], : old.shape[1]]
    return bool(np.array_equal(corner.view(np.uint32), old.view(np.uint32)))


def grown_maxima(reduce: Callable[..., np.ndarray], old: np.ndarray, old_shape: tuple[int, int], matrix: np.ndarray,
                 k_rows: int, k_cols: int, signed: bool = False) -> np.ndarray:
    """reduce(matrix, k_rows, k_cols, signed), given `old` = reduce of matrix[:old_shape[0], :old_shape[1]]:
    the whole blocks of old cells copied, the last block row and column and the new ones reduced."""
    rows, cols = matrix.shape
    top, left = old_shape[0] // k_rows, old_shape[1] // k_cols        # blocks of old cells only, each way
    out = np.empty((-(-rows // k_rows), -(-cols // k_cols)), dtype=np.float32)
    out[:top, :left] = old[:top, :left]
    if top * k_rows < rows:
        out[top:, :] = reduce(matrix[top * k_rows:, :], k_rows, k_cols, signed)
    if top and left * k_cols < cols:
        out[:top, left:] = reduce(matrix[: top * k_rows, left * k_cols:], k_rows, k_cols, signed)
    return out
