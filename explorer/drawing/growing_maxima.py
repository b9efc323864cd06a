"""Block maxima of an image that grows between draws, reduced again only where it changed.

A decoding step adds a row to the embeddings' (T, d) map and a row and a column to an attention map; the
cells already there stay as they were. With the k_r × k_c block maxima R of the old (r, c) image kept, the
new (R', C') image's maxima are R where a block holds old cells only, and reduced afresh elsewhere:

    R'[I, J] = R[I, J]                          for I < ⌊r / k_r⌋ and J < ⌊c / k_c⌋
    R'[I, J] = reduce(M'[block I, J])           otherwise (the last block row and column, and the new ones)

so a step costs a block row and a block column, not the whole (T, d) image (54 ms a step at 8,000 tokens,
several times a step as the view's factors changed back and forth). "Old cells as they were" is checked,
bit for bit, against a copy of the image the kept maxima came from: an image that is no extension of it
(another trace, a buffer written over) is reduced whole. Numpy only.
"""
from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable

import numpy as np

KEPT = 4          # factor pairs kept: a view that goes back to the factors it had reduces nothing again


class GrowingMaxima:
    """`reduce(matrix, k_rows, k_cols, signed)`: the full reduction (maxima.block_max) of the image last
    given to `changed`, from what is kept where the image only grew."""

    def __init__(self, reduce: Callable[..., np.ndarray]) -> None:
        self._reduce = reduce
        self._source: np.ndarray | None = None     # a copy of the image the kept maxima were reduced from,
        self._buffer: np.ndarray | None = None     # the first rows of this one, with room for more rows
        self._stale = True                         # changed() since: compare the image with _source first
        self._kept: OrderedDict = OrderedDict()    # (k_rows, k_cols, signed) -> (shape reduced at, maxima)

    def changed(self) -> None:
        """The image was set again: the next reduce looks at what grew."""
        self._stale = True

    def reduce(self, matrix: np.ndarray, k_rows: int, k_cols: int, signed: bool = False) -> np.ndarray:
        matrix = np.asarray(matrix, dtype=np.float32)
        if self._stale:
            self._follow(matrix)
        key = (k_rows, k_cols, bool(signed))
        kept = self._kept.get(key)
        if kept is not None and kept[0] == matrix.shape:
            out = kept[1]
        elif kept is not None:
            out = grown_maxima(self._reduce, kept[1], kept[0], matrix, k_rows, k_cols, signed)
        else:
            out = self._reduce(matrix, k_rows, k_cols, signed)
        self._kept[key] = (matrix.shape, out)
        self._kept.move_to_end(key)
        while len(self._kept) > KEPT:
            self._kept.popitem(last=False)
        return out

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
