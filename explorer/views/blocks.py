"""Blocks of an attention map: which block each (query, key) cell falls in and the block maxima of rows.

The all-heads grid (grid.py) and the long maps (long_maps.py) both cut maps into power-of-two blocks with
these functions. Numpy only.
"""
from __future__ import annotations

import itertools
import math

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


def reduce_rows(weights: np.ndarray, mask: np.ndarray, positions: np.ndarray, row: int, block: int):
    """Block maxima of (N_Q, n_new, n_kv) rows starting at query row `row`, and which blocks are allowed.

    Rows are reduced first (a max over whole contiguous rows, the cheap direction), then columns on
    the block-fewer rows; key positions in one unbroken run (every cache but a ring) are cut into
    blocks by reshaping, others by `reduceat` over their sorted order.
    """
    u_rows = np.arange(row // block, (row + weights.shape[1] - 1) // block + 1)
    weights = block_max(weights, 1, row, block)                            # (N_Q, len(u_rows), n_kv)
    mask = block_max(mask, 0, row, block)                                  # (len(u_rows), n_kv)
    columns = positions // block
    if np.any(np.diff(columns) < 0):                                        # ring caches are not in order
        order = np.argsort(positions, kind="stable")
        positions, columns, weights, mask = positions[order], columns[order], weights[:, :, order], mask[:, order]
    if positions.size and positions[-1] - positions[0] == positions.size - 1:   # one unbroken run
        u_cols = np.arange(columns[0], columns[-1] + 1)
        first = int(positions[0])
        return u_rows, u_cols, block_max(weights, 2, first, block), block_max(mask, 1, first, block)
    u_cols, col_starts = np.unique(columns, return_index=True)
    weights = np.maximum.reduceat(weights, col_starts, axis=2)
    mask = np.logical_or.reduceat(mask, col_starts, axis=1)
    return u_rows, u_cols, weights, mask


def block_max(values: np.ndarray, axis: int, start: int, block: int) -> np.ndarray:
    """Maxima (for booleans: any) along `axis` over runs of entries whose index start + i falls in one block."""
    n = values.shape[axis]
    head = min(n, (-start) % block)                     # entries before the first block boundary
    body = (n - head) // block * block
    pieces = []

    def run(begin: int, end: int) -> np.ndarray:
        return values[(slice(None),) * axis + (slice(begin, end),)]

    if head:
        pieces.append(run(0, head).max(axis=axis, keepdims=True))
    if body and axis == values.ndim - 1:
        # Along the last axis a reshape would reduce runs of `block` contiguous entries, numpy's slow
        # case; the elementwise maximum of the block's strided slices is many times faster.
        fold = np.logical_or if values.dtype == bool else np.maximum
        folded = run(head, head + body - block + 1)[..., ::block].copy()
        for k in range(1, block):
            fold(folded, run(head + k, head + body - block + k + 1)[..., ::block], out=folded)
        pieces.append(folded)
    elif body:
        shape = values.shape[:axis] + (body // block, block) + values.shape[axis + 1:]
        pieces.append(run(head, head + body).reshape(shape).max(axis=axis + 1))
    if head + body < n:
        pieces.append(run(head + body, n).max(axis=axis, keepdims=True))
    return pieces[0] if len(pieces) == 1 else np.concatenate(pieces, axis=axis)
