"""One head's map of a long trace as drawn, without its T × T array: block maxima computed a block of
query rows at a time, over only the keys those rows can see, and exact cells on demand. Numpy only.

For a block of query rows i₀..i₁ the visible keys lie in one span of columns (causal: j ≤ i₁; a
sliding window: i₀ − W < j ≤ i₁), so only that span is scored:

    S = Q[i₀:i₁] K[span]ᵀ · scale,   A = Z⁻¹ f_κ(S) over the visible keys      (attention_maps)

which is every entry the rows see, so A is exact there (the rest of a row is masked, 0). The
maxima over f × f blocks of the rows are then merged into the picture (blocks.reduce_rows), so a causal
8,000-token head costs half its scores and one block of rows beside the (T/f)² result. Where the weights
may be negative (the linear kernel: blocks.signed_map) each block keeps its signed extreme, the entry
furthest from 0 with its sign, instead of its maximum: a block of negative weights is drawn negative.
"""
from __future__ import annotations

import math
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence

import numpy as np

from explorer.core.attention_maps import ON_DEMAND_FROM, MaskRule, mask_rows, normalised, scores
from explorer.core.trace import AttentionRecord, Trace, run_slice
from explorer.views.blocks import (
    TILE,
    attention_records,
    grown_blocks,
    key_columns,
    merged,
    query_rows,
    reduce_rows,
    signed_map,
    tile_block,
)

STORED_LONG = 16 * ON_DEMAND_FROM    # stored maps of 4,096² entries and more are drawn as long ones too
DISPLAY_SIDE = 1024      # the panel draws a long head at most this many blocks a side (zoomed in: finer)
THREADS = min(2, os.cpu_count() or 1)    # threads a view's map is computed on
ROW_BLOCK = 256         # query rows a unit of a view's work: a head asked while the grid fills waits for one
COUNTS = {"row_blocks": 0}   # blocks of rows scored (tests count the work a cached view saves)


class Cancelled(Exception):
    """The view asking for the map no longer wants it."""


def is_long(trace: Trace, upto_step: int | None = None, cross: bool = False) -> bool:
    """Whether the views draw the maps as blocks, in the background: where they are rebuilt on demand
    (a prefill of ON_DEMAND_FROM entries or more), or stored but of STORED_LONG entries or more."""
    records = attention_records(trace, 0, upto_step, cross)
    t_q, t_kv = extent(trace, upto_step, cross)
    return any(r.on_demand for r in records) or t_q * t_kv >= STORED_LONG


def extent(trace: Trace, upto_step: int | None = None, cross: bool = False, layer: int = 0) -> tuple[int, int]:
    """(T_q, T_kv): the map's real rows and columns."""
    records = attention_records(trace, layer, upto_step, cross)
    t_kv = records[0].n_kv if cross else int(max(int(r.kv_positions.max()) for r in records)) + 1
    return query_rows(records)[-1], t_kv


def display_factor(t_q: int, t_kv: int, side: int | None = None) -> int:
    """f: the smallest block side that brings the map to `side` (DISPLAY_SIDE) blocks a side or fewer."""
    return max(1, math.ceil(max(t_q, t_kv) / (side or DISPLAY_SIDE)))


class _Rows:
    """Rows of one or more heads' maps (their mean where more than one), over the keys the rows see."""

    def __init__(self, trace: Trace, layer: int, heads: Sequence[int], values: str, cross: bool,
                 upto_step: int | None):
        self.trace, self.layer, self.heads, self.values, self.cross = trace, layer, list(heads), values, cross
        self.upto_step = upto_step
        self._keys: dict[int, np.ndarray] = {}          # K/V head -> (T_kv, d_qk), every key so far
        self._dense: dict[tuple, np.ndarray] = {}       # (id(record), head) -> stored (n_new, n_kv)

    def keys(self, record: AttentionRecord, kv_head: int, span: slice, positions: np.ndarray) -> np.ndarray:
        if record.k.shape[1] == record.n_kv:            # the record's own keys are all it attends
            return record.k[kv_head][span]
        if kv_head not in self._keys:
            self._keys[kv_head] = self.trace.k(self.layer, kv_head, self.upto_step, self.cross)
        return self._keys[kv_head][positions]

    def rows(self, record: AttentionRecord, first: int, last: int):
        """(positions (m,), values (n, m) float32, visible (n, m) bool) of the record's rows first..last;
        None when they see no key. Weights are 0 where masked, scores -inf."""
        span, visible = self._visible(record, first, last)
        if span is None:
            return None
        positions = key_columns(record, self.cross)[span]
        total = None
        for head in self.heads:
            one = self._one(record, head, first, last, span, visible, positions)
            total = one if total is None else np.add(total, one, out=total)
        if len(self.heads) > 1:
            total /= np.float32(len(self.heads))
        COUNTS["row_blocks"] += 1
        return positions, total, visible

    @staticmethod
    def _visible(record: AttentionRecord, first: int, last: int) -> tuple[slice | None, np.ndarray | None]:
        """The span of columns rows first..last see, and their mask over it: (n, span) bool. A mask kept
        as its rule over keys in order gives the span by bisection, without the rows' whole width."""
        rule = record.mask
        runs = rule.runs(first, last) if isinstance(rule, MaskRule) else None
        if runs is not None:
            lo, hi = int(runs[0].min()), int(runs[1].max())                  # the rows' runs, joined
            if hi <= lo:
                return None, None
            return slice(lo, hi), MaskRule(rule.kind, rule.queries[first:last], rule.keys[lo:hi],
                                           rule.window).rows(0, last - first)
        mask = mask_rows(rule, first, last)                                 # (n, n_kv)
        seen = np.flatnonzero(mask.any(axis=0))
        if seen.size == 0:
            return None, None
        span = slice(int(seen[0]), int(seen[-1]) + 1)
        return span, np.ascontiguousarray(mask[:, span])

    def _one(self, record, head, first, last, span, visible, positions) -> np.ndarray:
        kv_head = record.kv_head_of(head)
        if self.values == "scores":
            s = scores(record.q[head][first:last], self.keys(record, kv_head, span, positions), record.scale,
                       record.softcap)
            s[~visible] = -np.inf
            return s
        if record.on_demand:
            s = scores(record.q[head][first:last], record.k[kv_head][span], record.scale, record.weight_softcap)
            return normalised(s, visible, record.kernel)
        key = (id(record), head)
        if key not in self._dense:
            self._dense = {key: record.weights_of(head)}                    # one stored record at a time
        return np.array(self._dense[key][first:last, span], dtype=np.float32)


def block_maxima(trace: Trace, layer: int, heads: Sequence[int], block: int, upto_step: int | None = None,
                 cross: bool = False, values: str = "weights", window: tuple[int, int, int, int] | None = None,
                 cancelled: Callable[[], bool] | None = None, threads: int = 1) -> np.ndarray:
    """Maxima of the map over the `block` × `block` cells of a grid cut from cell (0, 0) (NaN where a
    whole block is masked; signed extremes where the weights may be negative, blocks.signed_map), for the
    blocks that hold the window rows r0..r1, columns c0..c1 (default: the whole map):
    (ceil(r1/block) - r0//block, ceil(c1/block) - c0//block). Only the window's cells count, so a window
    starting inside a block gives that block's maximum over its part.

    `heads`: one head, or several whose mean Ā = (1/n) Σ_h A_h is reduced. `block` 1 gives the
    window's exact values. Raises Cancelled between blocks of rows once `cancelled()` is true.
    `threads` > 1 shares the blocks of rows among that many threads (numpy releases the GIL).
    """
    t_q, t_kv = extent(trace, upto_step, cross, layer)
    r0, r1, c0, c1 = window or (0, t_q, 0, t_kv)
    top, left = r0 // block * block, c0 // block * block                 # the window's first block, in cells
    shape = (math.ceil(r1 / block) - r0 // block, math.ceil(c1 / block) - c0 // block)
    records = attention_records(trace, layer, upto_step, cross)
    signed = signed_map(records, values)
    out = np.full(shape, 0.0 if values == "weights" else -np.inf, dtype=np.float32)   # 0: below no extreme
    allowed = np.zeros(shape, dtype=bool)
    chunks = _chunks(records, block, (r0, r1))
    lock = threading.Lock()

    def work(part: int) -> None:
        source = _Rows(trace, layer, heads, values, cross, upto_step)
        for start, record, first, last in chunks[part::threads]:
            if cancelled is not None and cancelled():
                raise Cancelled()
            got = source.rows(record, first - start, last - start)
            reduced = None if got is None else _reduced(got, first - top, (c0, c1), left, block, signed)
            if reduced is not None:
                with lock:
                    _fold(out, allowed, *reduced, signed)

    _in_threads(work, threads if len(chunks) > 1 else 1)
    out[~allowed] = np.nan
    return out


def _in_threads(work: Callable[[int], None], threads: int) -> None:
    """work(0), ..., work(threads - 1), each on a daemon thread of its own but the first (a daemon never
    holds up the app's exit); the first exception raised is raised here once all are done."""
    errors: list[BaseException] = []

    def part(index: int) -> None:
        try:
            work(index)
        except BaseException as error:          # handed to the caller's thread
            errors.append(error)

    others = [threading.Thread(target=part, args=(i,), name="attention-rows", daemon=True) for i in range(1, threads)]
    for thread in others:
        thread.start()
    part(0)
    for thread in others:
        thread.join()
    if errors:
        raise errors[0]


def _chunks(records: list[AttentionRecord], block: int, rows: tuple[int, int]) -> list[tuple]:
    """(first row of the record, record, first, last): the blocks of rows first..last of the window's
    rows, ROW_BLOCK or so each (one tile row of the grid at 8,000 tokens), cut at block boundaries and at
    the records' edges."""
    chunk = max(block, ROW_BLOCK // block * block)                           # whole row blocks per chunk
    out = []
    for start, record in zip(query_rows(records), records):
        first, hi = max(rows[0], start), min(rows[1], start + record.n_new)
        while first < hi:
            last = min(hi, first // chunk * chunk + chunk)
            out.append((start, record, first, last))
            first = last
    return out


def _reduced(got, row: int, columns: tuple[int, int], left: int, block: int, signed: bool = False):
    """One block of rows reduced to the picture's blocks: its first row is `row` cells below the picture's
    top, and its keys in columns c0..c1 count, at `left` cells from the picture's left edge."""
    positions, rows, visible = got
    inside = (positions >= columns[0]) & (positions < columns[1])
    if not inside.all():
        positions, rows, visible = positions[inside], rows[:, inside], visible[:, inside]
    if positions.size == 0:
        return None
    u_rows, u_cols, reduced, mask = reduce_rows(rows[None], visible, positions - left, row, block, signed)
    return u_rows, u_cols, reduced[0], mask


def _fold(out, allowed, u_rows, u_cols, reduced, mask, signed: bool = False) -> None:
    rows_run, cols_run = run_slice(u_rows), run_slice(u_cols)
    if rows_run is not None and cols_run is not None:                # a run of blocks each way: views, no copies
        merged(out[rows_run, cols_run], reduced, signed)
        allowed[rows_run, cols_run] |= mask
        return
    cells = (u_rows[:, None], u_cols[None, :])
    target = out[cells]
    merged(target, reduced, signed)
    out[cells] = target
    allowed[cells] |= mask


def exact_cell(trace: Trace, layer: int, heads: Sequence[int], row: int, col: int, upto_step: int | None = None,
               cross: bool = False, values: str = "weights") -> float:
    """A[row, col] (or S, or the heads' mean) computed from its one query row; NaN where masked."""
    return float(block_maxima(trace, layer, heads, 1, upto_step, cross, values, (row, row + 1, col, col + 1))[0, 0])


class ReducedMaps:
    """Block maxima kept for the trace they were computed on, so a second look computes nothing; a trace
    that extends the kept one by decoding steps (its first records are the same objects) has only its
    new query rows computed and merged in. At most `limit` maps (None: no limit), the one asked for
    least recently going first. Safe to ask from a background thread."""

    def __init__(self, limit: int | None = None) -> None:
        self.limit = limit
        self._kept: OrderedDict = OrderedDict()    # (layer, heads, cross, values, block, kind) -> (records, map)
        self._lock = threading.Lock()

    def cached(self, trace: Trace, layer: int, heads: Sequence[int], block: int, upto_step: int | None = None,
               cross: bool = False, values: str = "weights") -> np.ndarray | None:
        """The map if it is kept for exactly this trace's records, else None (computes nothing)."""
        records = tuple(attention_records(trace, layer, upto_step, cross))
        with self._lock:
            kept = self._kept.get((layer, tuple(heads), cross, values, block, "view"))
        return kept[1] if kept is not None and _same(kept[0], records) else None

    def get(self, trace: Trace, layer: int, heads: Sequence[int], block: int, upto_step: int | None = None,
            cross: bool = False, values: str = "weights", cancelled: Callable[[], bool] | None = None,
            threads: int = 1, kind: str = "view") -> np.ndarray:
        """block_maxima(trace, layer, heads, block, ...), from what is kept where it can be: the map of
        a step before the kept one is the prompt's (kept apart, `kind` "prompt") and its steps' rows."""
        key = (layer, tuple(heads), cross, values, block, kind)
        records = tuple(attention_records(trace, layer, upto_step, cross))
        with self._lock:
            kept = self._kept.get(key)
        if kept is not None and _same(kept[0], records):
            reduced = kept[1]
        elif kept is not None and _same(kept[0], records[: len(kept[0])]):
            reduced = _extended(trace, layer, heads, kept, block, upto_step, cross, values, cancelled)
        elif len(records) > 1:                        # the prompt's map, kept apart, then the steps' rows
            prompt = self.get(trace, layer, heads, block, 0, cross, values, cancelled, threads, kind="prompt")
            reduced = _extended(trace, layer, heads, (records[:1], prompt), block, upto_step, cross, values,
                                cancelled)
        else:
            reduced = block_maxima(trace, layer, heads, block, upto_step, cross, values, cancelled=cancelled,
                                   threads=threads)
        self._keep(key, records, reduced)
        if len(records) == 1 and kind == "view":     # the prompt alone: what its steps' views start from
            self._keep(key[:-1] + ("prompt",), records, reduced)
        return reduced

    def _keep(self, key: tuple, records: tuple, reduced: np.ndarray) -> None:
        with self._lock:
            self._kept[key] = (records, reduced)
            self._kept.move_to_end(key)
            while self.limit is not None and len(self._kept) > self.limit:
                self._kept.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._kept.clear()


def _extended(trace, layer, heads, kept, block, upto_step, cross, values, cancelled) -> np.ndarray:
    """The kept map grown to the trace's size, with the new records' rows merged in (blocks.grown_blocks:
    NaN, a block no row saw, gives way to any value). The old rows never see the new keys: their cells there
    are masked, as the NaN the grown map starts from says, so the old rows count as of the map's full width."""
    old_rows = query_rows(list(kept[0]))[-1]
    t_q, t_kv = extent(trace, upto_step, cross, layer)

    def part(r0: int, r1: int, c0: int, c1: int) -> np.ndarray:
        return block_maxima(trace, layer, heads, block, upto_step, cross, values, (r0, r1, c0, c1), cancelled)

    signed = signed_map(attention_records(trace, layer, upto_step, cross), values)
    return grown_blocks(kept[1], (old_rows, t_kv), (t_q, t_kv), block, block, part, signed)


def grid_block(trace: Trace, upto_step: int | None = None, cross: bool = False, tile: int = TILE) -> int:
    """The block side of the all-heads grid's tiles (grid.tile_block of the map's size)."""
    return tile_block(*extent(trace, upto_step, cross), tile)


def _same(a: Sequence, b: Sequence) -> bool:
    return len(a) == len(b) and all(x is y for x, y in zip(a, b))
