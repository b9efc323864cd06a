"""A layer's mask as drawn, at any length, without its T x T array. Numpy only.

The picture holds the maximum of each f x f block of cells, where a cell is 0 (masked), 1 (allowed) or 2
(allowed, in a row the shown step added), and f is the smallest side that brings both sides of the
(T_q, T_kv) mask to `side` blocks or fewer (f = 1: the mask itself).

A record's mask is usually its rule (attention_maps.MaskRule): query i sees the keys of one run,

    causal: j <= i        sliding window: i - W < j <= i        full: every j,

so each row covers one run of columns and the blocks floor(lo / f) .. floor(hi / f); a block is allowed when
any of its rows covers it (a running sum of +1 at each run's first block and -1 after its last). A dense mask
(one an intervention edited, keys out of order) is reduced a chunk of rows at a time.
"""
from __future__ import annotations

import math
import weakref
from dataclasses import dataclass

import numpy as np

from explorer.core.attention_maps import ROW_BLOCK, MaskRule, mask_rows
from explorer.views.blocks import attention_records, key_columns
from explorer.views.caches import LruCache

MASKED, ALLOWED, NEW_ROW = 0, 1, 2
MASK_SIDE = 1024           # blocks a side at most: a panel is never more pixels than that


@dataclass(frozen=True)
class MaskPicture:
    blocks: np.ndarray          # (ceil(T_q / f), ceil(T_kv / f)) float32 of MASKED, ALLOWED, NEW_ROW
    factor: int                 # f: cells a block is wide and high
    shape: tuple[int, int]      # (T_q, T_kv): the mask's real extent


def mask_extent(records: list, cross: bool = False) -> tuple[int, int]:
    """(T_q, T_kv) of the mask assembled from `records`."""
    return sum(r.n_new for r in records), max(_kv_end(r, records[0], cross) for r in records)


def _kv_end(record, first, cross: bool) -> int:
    """1 + the last column `record`'s keys reach (`first`: the mask's first record, whose keys cross-attention's
    columns are)."""
    return first.n_kv if cross else int(record.kv_positions.max()) + 1


@dataclass
class _Folded:
    """The picture of a layer's first records, every row ALLOWED: a decoding step's picture is it with the rows of
    the records after it folded in, so a step folds its own rows (and its predecessor's, ALLOWED now), not the
    whole trace again. The records are held weakly (each holds its Q, K and V): an entry is used only while
    they are the very records asked for."""
    records: list                # weakref.ref of each record folded
    cross: bool
    factor: int
    blocks: np.ndarray           # uint8 (ceil(t_q / factor), ceil(t_kv / factor)), MASKED or ALLOWED
    t_q: int                     # rows folded
    t_kv: int                    # 1 + the last column they reach

    def starts(self, records: list, cross: bool) -> bool:
        """Whether these are the first of `records` (the same objects)."""
        return (self.cross == cross and len(self.records) <= len(records)
                and all(ref() is record for ref, record in zip(self.records, records)))


# (id of a layer's first record, cross) -> the latest _Folded of that layer's records: one per layer and kind of
# attention a panel shows, a few
_FOLDED = LruCache(8)


def mask_blocks(trace, layer: int, step: int | None = None, cross: bool = False, side: int = MASK_SIDE,
                new_rows: bool = True) -> MaskPicture:
    """Block maxima of the mask of `layer` up to `step`, the rows `step` added marked NEW_ROW (not a prefill's).
    The picture of the records before the last is kept (_Folded) for the next step's call to grow."""
    records = attention_records(trace, layer, step, cross)
    *body, last = records
    key = (id(records[0]), cross)
    kept = _FOLDED.recall(key)
    kept = kept if kept is not None and kept.starts(body, cross) else None
    done = len(kept.records) if kept is not None else 0
    body_kv = max(([kept.t_kv] if kept is not None else []) + [_kv_end(r, records[0], cross) for r in body[done:]],
                  default=0)
    t_q = (kept.t_q if kept is not None else 0) + sum(r.n_new for r in records[done:])
    t_kv = max(body_kv, _kv_end(last, records[0], cross))
    factor = max(1, math.ceil(max(t_q, t_kv) / side))
    out = np.zeros((math.ceil(t_q / factor), math.ceil(t_kv / factor)), dtype=np.uint8)
    kept = kept if kept is not None and kept.factor == factor else None      # blocks of another side: not grown
    done, row = (len(kept.records), kept.t_q) if kept is not None else (0, 0)
    if kept is not None:
        out[: kept.blocks.shape[0], : kept.blocks.shape[1]] = kept.blocks      # the same blocks, the extent grown
    for record in body[done:]:
        _fold(out, record, row, factor, ALLOWED, cross)
        row += record.n_new
    if body:               # kept in place of the entry it grew from
        _FOLDED.remember(key, _Folded([weakref.ref(r) for r in body], cross, factor, out.copy(), row, body_kv))
    _fold(out, last, row, factor, NEW_ROW if new_rows and body else ALLOWED, cross)
    return MaskPicture(out.astype(np.float32), factor, (t_q, t_kv))


def _fold(out: np.ndarray, record, row: int, factor: int, value: int, cross: bool) -> None:
    """Mark the blocks of the cells `record` allows, its rows from mask row `row`, with `value`."""
    cols = key_columns(record, cross)
    runs = _row_runs(record.mask, cols)
    if runs is not None:
        _fold_runs(out, *runs, row, factor, value)
        return
    for first in range(0, record.n_new, ROW_BLOCK):
        last = min(record.n_new, first + ROW_BLOCK)
        _fold_dense(out, mask_rows(record.mask, first, last), row + first, cols, factor, value)


def _row_runs(mask, cols: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """Each row's first and last allowed column, (n_new,) each (last < first: none), where the mask is a rule
    over keys in order at consecutive columns (MaskRule.runs); None otherwise."""
    runs = mask.runs() if isinstance(mask, MaskRule) and len(cols) and not np.any(np.diff(cols) != 1) else None
    if runs is None:
        return None
    lo, hi = runs
    return int(cols[0]) + lo, int(cols[0]) + hi - 1


def _fold_runs(out: np.ndarray, first: np.ndarray, last: np.ndarray, row: int, factor: int, value: int) -> None:
    """Mark the blocks each row's run of columns first..last covers; the rows start at picture row `row`."""
    n = first.shape[0]
    if n == 0:
        return
    block_rows = (row + np.arange(n)) // factor
    top = int(block_rows[0])
    seen = last >= first
    diff = np.zeros((int(block_rows[-1]) - top + 1, out.shape[1] + 1), dtype=np.int32)   # (R', C + 1)
    np.add.at(diff, (block_rows[seen] - top, first[seen] // factor), 1)
    np.add.at(diff, (block_rows[seen] - top, last[seen] // factor + 1), -1)
    covered = np.cumsum(diff, axis=1, dtype=np.int32)[:, :-1] > 0
    target = out[top: top + covered.shape[0]]
    np.maximum(target, covered.astype(np.uint8) * np.uint8(value), out=target)


def _fold_dense(out: np.ndarray, dense: np.ndarray, row: int, cols: np.ndarray, factor: int, value: int) -> None:
    """Mark the blocks of the allowed cells of `dense` (n, n_kv) bool, whose rows start at mask row `row`."""
    if dense.shape[0] == 0 or not dense.any():
        return
    block_rows = (row + np.arange(dense.shape[0])) // factor
    row_starts = np.flatnonzero(np.r_[True, np.diff(block_rows) != 0])
    per_row_block = np.logical_or.reduceat(dense, row_starts, axis=0)            # (R', n_kv)
    order = np.argsort(cols // factor, kind="stable")
    block_cols = (cols // factor)[order]
    col_starts = np.flatnonzero(np.r_[True, np.diff(block_cols) != 0])
    covered = np.logical_or.reduceat(per_row_block[:, order], col_starts, axis=1)   # (R', C')
    cells = (block_rows[row_starts][:, None], block_cols[col_starts][None, :])
    out[cells] = np.maximum(out[cells], covered.astype(np.uint8) * np.uint8(value))


def mask_allowed(trace, layer: int, row: int, col: int, step: int | None = None, cross: bool = False) -> bool:
    """M[row, col] of the assembled mask, read from the one record that holds query `row`."""
    for record in attention_records(trace, layer, step, cross):
        if row < record.n_new:
            where = np.flatnonzero(key_columns(record, cross) == col)
            return bool(where.size) and bool(mask_rows(record.mask, row, row + 1)[0, where[0]])
        row -= record.n_new
    raise IndexError(row)
