"""Blocks of an attention map: which block each (query, key) cell falls in and the block maxima of rows.

Where the weights may be negative (the linear kernel: signed_map) a block keeps its signed extreme, the entry
furthest from 0 with its sign, instead of its maximum, so a block of negative weights is drawn negative.

The all-heads grid (grid.py) and the long maps (long_maps.py) both cut maps into power-of-two blocks with
these functions; a figure past its cell limit (maps.display_reduced) and an image drawn smaller than it is
(drawing.maxima) reduce with image_block_max, and both a growing image (drawing.growing_maxima) and a long
map a decoding step longer (long_maps.ReducedMaps) grow with grown_blocks. Numpy only.
"""
from __future__ import annotations

import itertools
import math
from collections.abc import Callable

import numpy as np

from explorer.core.trace import AttentionRecord, Trace

TILE = 32   # tile side in blocks: between TILE/2 and TILE (+1); shorter traces keep one pixel per token


def attention_records(trace: Trace, layer: int, upto_step: int | None, cross: bool) -> list[AttentionRecord]:
    end = trace.n_steps if upto_step is None else upto_step + 1
    return [(s.layers[layer].cross if cross else s.layers[layer].attn) for s in trace.steps[:end]]


def key_columns(record: AttentionRecord, cross: bool) -> np.ndarray:
    """The map column of each of the record's keys, (n_kv,) int: its absolute position (a source index for
    cross-attention)."""
    return np.arange(record.n_kv) if cross else np.asarray(record.kv_positions)


def tile_block(t_q: int, t_kv: int, tile: int = TILE) -> int:
    """The side of the blocks a tile reduces: a power of two, so the block (and the cache of reduced
    rows) changes only when T doubles; 1 where the map is at most `tile` a side."""
    return 1 << max(0, math.ceil(math.log2(max(t_q, t_kv) / tile))) if max(t_q, t_kv) > tile else 1


def query_rows(records: list[AttentionRecord]) -> list[int]:
    """The first query row of each record, then the number of rows."""
    return [0, *itertools.accumulate(r.n_new for r in records)]


def signed_map(records: list[AttentionRecord], values: str) -> bool:
    """Whether a reduced map of these records' `values` may hold negative weights, so that its blocks keep their
    signed extremes (`extreme`): the weights of a record whose kernel is the linear f_κ(x) = x (A = Z⁻¹ S has
    either sign; exp and relu give A ≥ 0). Scores keep their blocks' maxima, the score the softmax favours."""
    return values == "weights" and any(r.kernel.name == "linear" for r in records)


def signed_extreme(lowest: np.ndarray, highest: np.ndarray) -> np.ndarray:
    """Of each block's lowest and highest entry, the one furthest from 0, its sign kept (a tie goes to the
    positive one); NaN where both are. The extreme of extremes is the extreme of the whole: blocks of blocks,
    or a block merged with its new cells, give what the block's cells give at once."""
    return np.where(-lowest > highest, lowest, highest)


def extreme(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Elementwise the entry of a and b furthest from 0, its sign kept (signed_extreme); NaN gives way."""
    return signed_extreme(np.fmin(a, b), np.fmax(a, b))


def merged(target: np.ndarray, blocks: np.ndarray, signed: bool = False) -> None:
    """Merge `blocks` into `target` in place: the maxima (or, `signed`, the extremes) of both; NaN gives way."""
    if signed:
        target[...] = extreme(target, blocks)
    else:
        np.fmax(target, blocks, out=target)


def reduce_rows(weights: np.ndarray, mask: np.ndarray, positions: np.ndarray, row: int, block: int,
                signed: bool = False):
    """Block maxima (`signed`: signed extremes) of (N_Q, n_new, n_kv) rows starting at query row `row`, and
    which blocks are allowed.

    Rows are reduced first (a max over whole contiguous rows, the cheap direction), then columns on
    the block-fewer rows; key positions in one unbroken run (every cache but a ring) are cut into
    blocks by reshaping, others by `reduceat` over their sorted order.
    """
    u_rows = np.arange(row // block, (row + weights.shape[1] - 1) // block + 1)
    weights = block_max(weights, 1, row, block, signed)                    # (N_Q, len(u_rows), n_kv)
    mask = block_max(mask, 0, row, block)                                  # (len(u_rows), n_kv)
    columns = positions // block
    if np.any(np.diff(columns) < 0):                                        # ring caches are not in order
        order = np.argsort(positions, kind="stable")
        positions, columns, weights, mask = positions[order], columns[order], weights[:, :, order], mask[:, order]
    if positions.size and positions[-1] - positions[0] == positions.size - 1:   # one unbroken run
        u_cols = np.arange(columns[0], columns[-1] + 1)
        first = int(positions[0])
        return u_rows, u_cols, block_max(weights, 2, first, block, signed), block_max(mask, 1, first, block)
    u_cols, col_starts = np.unique(columns, return_index=True)
    highest = np.maximum.reduceat(weights, col_starts, axis=2)
    weights = signed_extreme(np.minimum.reduceat(weights, col_starts, axis=2), highest) if signed else highest
    mask = np.logical_or.reduceat(mask, col_starts, axis=1)
    return u_rows, u_cols, weights, mask


def block_max(values: np.ndarray, axis: int, start: int, block: int, signed: bool = False) -> np.ndarray:
    """Maxima (for booleans: any; `signed`: signed extremes) along `axis` over runs of entries whose index
    start + i falls in one block."""
    if values.dtype == bool:
        return _fold(values, axis, start, block, np.logical_or)
    highest = _fold(values, axis, start, block, np.maximum)
    return signed_extreme(_fold(values, axis, start, block, np.minimum), highest) if signed else highest


def _fold(values: np.ndarray, axis: int, start: int, block: int, ufunc: np.ufunc) -> np.ndarray:
    n = values.shape[axis]
    head = min(n, (-start) % block)                     # entries before the first block boundary
    body = (n - head) // block * block
    pieces = []

    def run(begin: int, end: int) -> np.ndarray:
        return values[(slice(None),) * axis + (slice(begin, end),)]

    if head:
        pieces.append(ufunc.reduce(run(0, head), axis=axis, keepdims=True))
    if body and axis == values.ndim - 1:
        # Along the last axis a reshape would reduce runs of `block` contiguous entries, numpy's slow
        # case; the elementwise maximum of the block's strided slices is many times faster.
        folded = run(head, head + body - block + 1)[..., ::block].copy()
        for k in range(1, block):
            ufunc(folded, run(head + k, head + body - block + k + 1)[..., ::block], out=folded)
        pieces.append(folded)
    elif body:
        shape = values.shape[:axis] + (body // block, block) + values.shape[axis + 1:]
        pieces.append(ufunc.reduce(run(head, head + body).reshape(shape), axis=axis + 1))
    if head + body < n:
        pieces.append(ufunc.reduce(run(head + body, n), axis=axis, keepdims=True))
    return pieces[0] if len(pieces) == 1 else np.concatenate(pieces, axis=axis)


def image_block_max(matrix: np.ndarray, k_rows: int, k_cols: int, signed: bool = False) -> np.ndarray:
    """out[I, J] = max { M[i, j] : i // k_rows = I, j // k_cols = J }; NaN (masked) counts only where a whole
    block is NaN, and the last blocks of a side hold its remainder. `signed` (a diverging scale, -m to m):
    the block's entry furthest from 0 instead, its sign kept (signed_extreme), so a negative peak shows as a
    positive one does."""
    if k_rows == 1 and k_cols == 1:
        return matrix
    rows, cols = matrix.shape
    n_rows, n_cols = -(-rows // k_rows), -(-cols // k_cols)
    if rows % k_rows or cols % k_cols:
        padded = np.full((n_rows * k_rows, n_cols * k_cols), np.nan, dtype=np.float32)
        padded[:rows, :cols] = matrix
    else:
        padded = np.asarray(matrix, dtype=np.float32)

    def fold(ufunc: np.ufunc) -> np.ndarray:
        # rows first, over whole contiguous rows: 14x faster than reducing a (n, k, m, k) view's last axis
        down = ufunc.reduce(padded.reshape(n_rows, k_rows, n_cols * k_cols), axis=1)
        return ufunc.reduce(down.reshape(n_rows, n_cols, k_cols), axis=2)

    highest = fold(np.fmax)
    return signed_extreme(fold(np.fmin), highest) if signed else highest


def grown_blocks(old: np.ndarray, old_shape: tuple[int, int], shape: tuple[int, int], k_rows: int, k_cols: int,
                 part: Callable[[int, int, int, int], np.ndarray], signed: bool = False) -> np.ndarray:
    """The block maxima (`signed`: signed extremes) of a map of `shape` cells that only grew from one of
    `old_shape` cells, whose k_rows × k_cols blocks `old` are, without reducing the old cells again:

        B'[I, J] = B[I, J] merged with the blocks of the new cells in block (I, J)    (merged: NaN gives way)

    `part(r0, r1, c0, c1)` reduces the map's rows r0..r1, columns c0..c1 to the blocks that hold them, its
    first block the one cell (r0, c0) falls in (it may start that block at its boundary: old cells merged
    again change nothing). Asked for the old rows' new columns, then the new rows. Both a growing image drawn
    smaller (drawing.growing_maxima) and a long trace's maps a decoding step longer (long_maps.ReducedMaps)
    grow this way."""
    rows, cols = shape
    out = np.full((-(-rows // k_rows), -(-cols // k_cols)), np.nan, dtype=np.float32)
    out[: old.shape[0], : old.shape[1]] = old
    old_rows, old_cols = old_shape
    for r0, r1, c0, c1 in ((0, old_rows, old_cols, cols), (old_rows, rows, 0, cols)):
        if r0 < r1 and c0 < c1:
            blocks = part(r0, r1, c0, c1)
            top, left = r0 // k_rows, c0 // k_cols
            merged(out[top: top + blocks.shape[0], left: left + blocks.shape[1]], blocks, signed)
    return out
