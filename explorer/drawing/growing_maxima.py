"""Block maxima of an image that grows between draws, reduced again only where it changed.

A decoding step adds a row to the embeddings' (T, d) map and a row and a column to an attention map; the
cells already there stay as they were. The image is reduced rows first (maxima.block_max folds whole rows
first too): B = the maxima of each k_r rows, column by column, (⌈T / k_r⌉, C). With B of the old (r, c)
image kept, the new image's B' is B with only the new cells reduced and merged in:

    B'[I, j] = B[I, j] merged with the maxima of the new cells of block row I, column j

and the drawn maxima are B' folded k_c columns at a time, a (⌈T / k_r⌉, C) array, small. Maxima of maxima
are maxima; on a signed scale the entry furthest from 0 of the entries furthest from 0 is the block's own
(a tie goes to the positive entry both times). The growing itself is views.blocks.grown_blocks, which the
long attention maps a decoding step longer grow by too. So a step costs a block row, not the whole (T, d) image
(54 ms at 8,000 tokens, several times a step as the view's width changed), and a new width costs the
small fold. "Old cells as they were" is checked, bit for bit, against a copy of the image the kept B came
from: an image that is no extension of it (another trace, a buffer written over) is reduced whole.
Numpy only.
"""
from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable

import numpy as np

from explorer.views.blocks import grown_blocks

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
            rows = grown_blocks(kept[1], kept[0], matrix.shape, k_rows, 1, self._part(matrix, k_rows, signed), signed)
        else:
            rows = self._reduce(matrix, k_rows, 1, signed)
        self._kept[key] = (matrix.shape, rows)
        self._kept.move_to_end(key)
        while len(self._kept) > KEPT:
            self._kept.popitem(last=False)
        return self._reduce(rows, 1, k_cols, signed)

    def _part(self, matrix: np.ndarray, k_rows: int, signed: bool) -> Callable[[int, int, int, int], np.ndarray]:
        """The rows' maxima of a window of `matrix`, from its first block row's boundary (grown_blocks' part)."""
        return lambda r0, r1, c0, c1: self._reduce(matrix[r0 - r0 % k_rows: r1, c0:c1], k_rows, 1, signed)

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
