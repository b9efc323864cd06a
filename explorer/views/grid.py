"""The all-heads grid as one image: every layer × head attention map, block-max downsampled.

It shows the weights A or the pre-softmax scores S = Q_h K_hᵀ · scale (what
`Trace.scores` computes, here one step's new rows at a time, so a decoding
step costs one row per head).

One `ImageItem` for the whole grid keeps a 30 × 9 repaint at 512 tokens cheap, and
downsampling straight from the per-step records never builds the dense (H, T, T)
of every layer at once (at 2,048 tokens that would be gigabytes).
Numpy only.
"""
from __future__ import annotations

import math
import operator
from dataclasses import dataclass, field

import numpy as np

from explorer.core import kernel as kernels
from explorer.core.trace import AttentionRecord, Trace, run_slice
from explorer.views.blocks import (  # noqa: F401
    TILE,
    attention_records,
    block_max,
    key_columns,
    merged,
    query_rows,
    reduce_rows,
    signed_map,
    tile_block,
)
from explorer.views.caches import LruCache
from explorer.views.long_maps import block_maxima, extent
from explorer.views.tile_layout import TileLayout

_block_max, _reduce = block_max, reduce_rows             # the names tests/app/test_grid_reduce.py reads


def downsampled_attention(trace: Trace, layer: int, tile: int = TILE, upto_step: int | None = None,
                          cross: bool = False, values: str = "weights") -> np.ndarray:
    """Block maxima of one layer's weights (or scores): (N_Q, ceil(T_q/f), ceil(T_kv/f)) with f the block;
    signed extremes (the entry furthest from 0, its sign kept) where the weights may be negative
    (blocks.signed_map: the linear kernel), so a block of negative weights is drawn negative.

    Blocks with no allowed cell at all are NaN (drawn transparent), like masked cells.
    """
    tiles = _LayerTiles(trace, layer, tile, upto_step, cross, values)
    tiles.merge_pending()
    return tiles.finish()


class _LayerTiles:
    """One layer's tiles while they are brought up to date: those it had for the records that begin
    this trace's (from the cache), and the records still to merge."""

    def __init__(self, trace: Trace, layer: int, tile: int, upto_step: int | None, cross: bool, values: str,
                 first_rows: list[int] | None = None):
        """`first_rows[i]`: the first query row of record i, and the number of rows last (every layer's
        records have the same rows, the steps' new tokens, so a grid counts them once)."""
        self.trace, self.layer, self.cross, self.values = trace, layer, cross, values
        self.records = attention_records(trace, layer, upto_step, cross)
        first_rows = first_rows or query_rows(self.records)
        t_q = first_rows[-1]
        # Every step's keys include its own new token, the newest position so far.
        t_kv = self.records[0].n_kv if cross else int(self.records[-1].kv_positions.max()) + 1
        self.block = tile_block(t_q, t_kv, tile)
        shape = (self.records[0].n_heads, math.ceil(t_q / self.block), math.ceil(t_kv / self.block))
        self.signed = signed_map(self.records, values)      # blocks keep their signed extremes, not maxima
        self.key = ("tiles", layer, tile, cross, values, self.signed)
        # below every score and weight; for signed extremes 0, which every other value is further from 0 than
        fill = self.fill = 0.0 if self.signed else -np.inf
        self.out, self.allowed, self.done = _tiles_so_far(self.key, self.records, self.block, shape, fill)
        self.row = first_rows[self.done]                                # the first query row still to merge

    def pending(self) -> list[AttentionRecord]:
        return self.records[self.done:]

    def merge(self, u_rows, u_cols, weights, mask, n_rows: int) -> None:
        """Merge the blocks of the next record's rows (n_rows of them)."""
        rows, cols = run_slice(u_rows), run_slice(u_cols)
        if rows is not None and cols is not None:                # a run of blocks each way: views, no copies
            merged(self.out[:, rows, cols], weights, self.signed)
            self.allowed[rows, cols] |= mask
        else:
            cells = (slice(None), u_rows[:, None], u_cols[None, :])
            target = self.out[cells]
            merged(target, weights, self.signed)
            self.out[cells] = target
            self.allowed[u_rows[:, None], u_cols[None, :]] |= mask
        self.row += n_rows
        self.done += 1

    def merge_pending(self) -> None:
        for record in self.pending():
            if record.on_demand:
                reduced = self._reduced_on_demand(record)
            elif self.values == "scores":
                reduced = _reduced_scores(self.trace, self.layer, self.done, record, self.row, self.block, self.cross)
            else:
                reduced = _reduced(record, self.row, self.block, self.cross, self.signed)
            self.merge(*reduced, record.n_new)

    def _reduced_on_demand(self, record: AttentionRecord):
        """A record rebuilt on demand, a head and a block of rows at a time (never the layer's dense (N_Q, T, T))."""
        window = (self.row, self.row + record.n_new, 0, extent(self.trace, self.done, self.cross, self.layer)[1])
        maps = np.stack([block_maxima(self.trace, self.layer, [head], self.block, self.done, self.cross,
                                      self.values, window) for head in range(record.n_heads)])   # (N_Q, r, c)
        allowed = np.isfinite(maps[0])                                     # the mask is every head's
        maps[:, ~allowed] = self.fill
        top = self.row // self.block
        return np.arange(top, top + maps.shape[1]), np.arange(maps.shape[2]), maps, allowed

    def finish(self) -> np.ndarray:
        _CACHE.remember(self.key, (tuple(self.records), self.block, self.out, self.allowed))
        shown = self.out.copy()
        shown[:, ~self.allowed] = np.nan
        return shown


def _merge_one_row_steps(layers: list[_LayerTiles]) -> None:
    """Merge the one pending decoding step of many layers with one reduction per group of layers
    sharing the step's mask and key positions (the layers of one kind): a step's new rows cost a
    few numpy calls for the whole grid instead of a dozen per layer."""
    groups: dict[tuple, list[_LayerTiles]] = {}
    for tiles in layers:
        pending = tiles.pending()
        if tiles.values != "weights" or tiles.signed or len(pending) != 1 or pending[0].n_new != 1 or \
                not pending[0].mask.all():
            continue
        record = pending[0]
        key = (np.asarray(record.mask).tobytes(), np.asarray(record.kv_positions).tobytes(), tiles.row, tiles.block,
               tiles.cross)
        groups.setdefault(key, []).append(tiles)
    for (_, _, row, block, cross), members in groups.items():
        first = members[0].pending()[0]
        n_heads = first.weights_packed.shape[0]
        weights = np.stack([m.pending()[0].weights_packed for m in members]).astype(np.float32, copy=False)
        u_rows, u_cols, reduced, mask = reduce_rows(weights.reshape(len(members) * n_heads, 1, -1),
                                                    np.asarray(first.mask), key_columns(first, cross), row, block)
        for index, tiles in enumerate(members):
            tiles.merge(u_rows, u_cols, reduced[index * n_heads:(index + 1) * n_heads], mask, 1)


def _tiles_so_far(key: tuple, records: list, block: int, shape: tuple, fill: float):
    """The layer's tiles over the records it had last time, grown to `shape`, when those records begin
    this list and the block is the same (a decoding step: only the new step's rows are merged), and how
    many records they hold; else empty tiles and 0."""
    out = np.full(shape, fill, dtype=np.float32)
    allowed = np.zeros(shape[1:], dtype=bool)
    hit = _CACHE.recall(key)
    if hit is None or hit[1] != block or len(hit[0]) > len(records) or hit[2].shape[0] != shape[0] or \
            not all(map(operator.is_, hit[0], records)):
        return out, allowed, 0
    _, _, old_out, old_allowed = hit
    rows, cols = old_allowed.shape
    out[:, :rows, :cols] = old_out
    allowed[:rows, :cols] = old_allowed
    return out, allowed, len(hit[0])


# Records are immutable and shared between traces: a layer's tiles and a step's reduced rows, by key.
_CACHE = LruCache(8192)


def _cached(key: tuple, record: AttentionRecord, compute):
    """Records are immutable and shared between traces: after a decoding step only the new row is reduced."""
    hit = _CACHE.recall(key)
    if hit is not None and hit[0] is record:
        return hit[1]
    result = compute()
    _CACHE.remember(key, (record, result))
    return result


def _reduced(record: AttentionRecord, row: int, block: int, cross: bool, signed: bool = False):
    """One step's rows of the weights A reduced to blocks (`signed`: to their signed extremes, from the dense
    rows: the packed rows' reduction keeps maxima only)."""
    def compute():
        mask, positions = np.asarray(record.mask), key_columns(record, cross)
        plan = None if record.on_demand or signed else _packed_plan(mask, positions, row, block)
        if plan is not None:                                                # a prefill: never unpacked
            return _reduce_packed(record.weights_packed, plan)
        weights = np.asarray(record.weights, dtype=np.float32)              # (N_Q, n_new, n_kv)
        return reduce_rows(weights, mask, positions, row, block, signed)
    return _cached(("weights", id(record), row, block, cross, signed), record, compute)


_PLANS = LruCache(16)      # (id(mask), row, block, first position) -> (mask, plan)


def _packed_plan(mask: np.ndarray, positions: np.ndarray, row: int, block: int):
    """How to reduce packed rows under this mask, or None where they are not one run per row.

    Rows whose allowed keys are one unbroken run of columns over keys in order (causal and sliding
    prefills) can be reduced from the packed weights. The plan depends only on the mask, which the
    layers of one kind share, so it is made once for all of them: per row its row block, its run
    of columns and where the run is in the packed array; the blocks' rows and columns; and the
    mask reduced to blocks.
    """
    key = (id(mask), row, block, int(positions[0]) if positions.size else 0)
    known = _PLANS.get(key)
    if known is not None and known[0] is mask:
        return known[1]
    plan = None
    if not mask.all() and positions.size >= 2 and not np.any(np.diff(positions) != 1):
        counts = mask.sum(axis=1)
        first = mask.argmax(axis=1)
        last = mask.shape[1] - 1 - mask[:, ::-1].argmax(axis=1)
        if not np.any(counts == 0) and not np.any(last - first + 1 != counts):
            n_new = mask.shape[0]
            base = int(positions[0])
            u_rows = np.arange(row // block, (row + n_new - 1) // block + 1)
            offsets = np.cumsum(counts) - counts                            # row i starts here in `packed`
            row_blocks = (row + np.arange(n_new)) // block - u_rows[0]
            runs: dict[int, list] = {}                                      # row block -> its rows' runs
            for b, f, c, o in zip(row_blocks.tolist(), first.tolist(), counts.tolist(), offsets.tolist()):
                runs.setdefault(b, []).append((slice(f, f + c), slice(o, o + c)))
            runs = list(runs.items())
            u_cols = np.arange(base // block, int(positions[-1]) // block + 1)
            reduced_mask = block_max(block_max(mask, 0, row, block), 1, base, block)
            plan = (runs, u_rows, u_cols, reduced_mask, base, block, mask.shape[1])
    _PLANS.remember(key, (mask, plan))
    return plan


def _reduce_packed(packed: np.ndarray, plan):
    """What `_reduce` gives for the dense weights, read straight from the packed rows.

    Each row's allowed weights are one run of the packed array; folding every run into its row
    block with an elementwise max (one call per row) reduces the rows without unpacking, and the
    columns are then cut into blocks by reshaping. Cells start at -inf, below every weight (a kernel other
    than exp makes some negative); a block no row reaches is 0, as the dense masked zeros give it.
    """
    runs, u_rows, u_cols, reduced_mask, base, block, n_kv = plan
    per_block = np.full((u_rows.size, packed.shape[0], n_kv), -np.inf, dtype=np.float32)   # rows reduced, by block
    for row_block, rows in runs:
        folded = per_block[row_block]                                               # (N_Q, n_kv), contiguous
        for columns, source in rows:
            target = folded[:, columns]
            np.maximum(target, packed[:, source], out=target)
    per_block = np.ascontiguousarray(per_block.transpose(1, 0, 2))                 # (N_Q, row blocks, n_kv)
    reduced = block_max(per_block, 2, base, block)
    reduced[reduced == -np.inf] = 0.0
    return u_rows, u_cols, reduced, reduced_mask


def _reduced_scores(trace: Trace, layer: int, index: int, record: AttentionRecord, row: int, block: int,
                    cross: bool):
    """One step's rows of the scores S = Q_h K_hᵀ · scale (masked: -inf), as Trace.scores computes them."""
    def compute():
        n_heads = record.q.shape[0]
        kv_heads = [trace.kv_head_of(h) for h in range(n_heads)]
        keys = {g: trace.k(layer, g, index, cross) for g in set(kv_heads)}            # g -> (T_kv, d_qk)
        columns = key_columns(record, cross)
        k = np.stack([keys[g][columns] for g in kv_heads]).astype(np.float32)          # (N_Q, n_kv, d_qk)
        s = np.matmul(record.q.astype(np.float32), k.transpose(0, 2, 1)) * record.scale  # (N_Q, n_new, n_kv)
        s = kernels.softcapped(s, record.softcap)                                      # c tanh(S / c)
        mask = np.asarray(record.mask)
        s = np.where(mask[None], s, -np.inf).astype(np.float32)
        return reduce_rows(s, mask, columns, row, block)
    return _cached(("scores", id(record), row, block, cross), record, compute)


@dataclass(eq=False)
class Mosaic:
    """Tiles laid out with one-pixel NaN gutters: layers down, heads across, each layer's heads `per_row` a row
    (wrapped onto bands of rows where they do not fit the width; None: every head in one row). Where each tile
    sits is its `layout`'s (views.tile_layout), the one mapping drawing, picking, outlines, marks and labels read:
    one TileLayout, made with the grid and again at each wrap, which the methods below read."""

    image: np.ndarray        # (L*B*(R+1)-1, k*(C+1)-1) for k heads a row in B bands, NaN in the gutters
    tile_shape: tuple[int, int]     # a tile's tokens (r, c); its pixels (R, C) are tile_px
    n_layers: int
    n_heads: int
    per_row: int | None = None
    layout: TileLayout = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.tile_shape = tuple(self.tile_shape)
        self.layout = TileLayout(self.n_layers, self.n_heads, self.tile_shape, self.per_row)

    @property
    def tile_px(self) -> tuple[int, int]:
        """A tile's pixels in the image, down and across (TileLayout.tile_px: more than its tokens in a small map)."""
        return self.layout.tile_px

    def tile_at(self, row: int, col: int) -> tuple[int, int] | None:
        """(layer, head) of the tile under an image pixel, or None in a gutter or an empty slot."""
        return self.layout.tile_at(row, col)

    def tile_origin(self, layer: int, head: int) -> tuple[int, int]:
        return self.layout.tile_origin(layer, head)

    def layer_block(self, layer: int) -> tuple[int, int, int, int]:
        """(top, left, height, width) in pixels of all of a layer's tiles."""
        return self.layout.layer_block(layer)

    def layer_centres(self) -> list[float]:
        return self.layout.layer_centres()

    def head_centres(self) -> list[float]:
        return self.layout.head_centres()

    def head_labels(self) -> list[str]:
        return self.layout.head_labels()

    def row_labels(self) -> tuple[list[str], list[float]]:
        return self.layout.row_labels()

    def place(self, layer: int, head: int, tile: np.ndarray) -> None:
        """Draw one head's tile (its tokens' values) into the image (a grid filled in as its tiles are computed)."""
        (top, left), blocks = self.layout.tile_origin(layer, head), self.layout.in_pixels(tile)
        self.image[top: top + blocks.shape[0], left: left + blocks.shape[1]] = blocks

    def tile(self, layer: int, head: int) -> np.ndarray:
        """The head's tile, a value a token's cell (a view of the image): all NaN until it is placed in a grid
        being filled."""
        (top, left), (rows, columns), (down, across) = (self.layout.tile_origin(layer, head), self.tile_px,
                                                        self.layout.cell_px)
        return self.image[top: top + rows: down, left: left + columns: across]

    def wrap(self, per_row: int | None) -> None:
        """Lay the heads out `per_row` a row (None: all in one), each tile moved with its head."""
        wrapped = TileLayout(self.n_layers, self.n_heads, self.tile_shape, per_row)
        if wrapped.across == self.layout.across:
            return
        tiles = {(layer, head): self.tile(layer, head).copy()
                 for layer in range(self.n_layers) for head in range(self.n_heads)}
        self.per_row, self.layout = per_row, wrapped
        self.image = np.full(wrapped.image_shape(), np.nan, dtype=np.float32)
        for (layer, head), tile in tiles.items():
            self.place(layer, head, tile)


def mosaic(trace: Trace, layers: list[int] | None = None, tile: int = TILE, upto_step: int | None = None,
           cross: bool = False, values: str = "weights") -> Mosaic:
    """Every head of the given layers (all by default) in one image, of the weights A or the scores S."""
    layers = list(range(trace.model.n_layers)) if layers is None else layers
    first_rows = query_rows(attention_records(trace, layers[0], upto_step, cross))
    states = [_LayerTiles(trace, layer, tile, upto_step, cross, values, first_rows) for layer in layers]
    _merge_one_row_steps(states)
    for state in states:
        state.merge_pending()
    tiles = np.stack([state.finish() for state in states])            # (L, H, r, c)
    n_layers, n_heads, r, c = tiles.shape
    tiles = TileLayout(n_layers, n_heads, (r, c)).in_pixels(tiles)        # a token's cell, its block of pixels
    rows, columns = tiles.shape[2:]
    # Layers down, heads across, a NaN gutter after each tile: pad, then read as one image.
    padded = np.full((n_layers, rows + 1, n_heads, columns + 1), np.nan, dtype=np.float32)
    padded[:, :rows, :, :columns] = tiles.transpose(0, 2, 1, 3)
    image = padded.reshape(n_layers * (rows + 1), n_heads * (columns + 1))[:-1, :-1]
    return Mosaic(np.ascontiguousarray(image), (r, c), n_layers, n_heads)


def blank_mosaic(n_layers: int, n_heads: int, tile_shape: tuple[int, int]) -> Mosaic:
    """A grid with no tile drawn yet (all NaN, transparent), to `place` tiles into as they come."""
    image = np.full(TileLayout(n_layers, n_heads, tuple(tile_shape)).image_shape(), np.nan, dtype=np.float32)
    return Mosaic(image, tuple(tile_shape), n_layers, n_heads)


def score_levels(image: np.ndarray) -> tuple[float, float]:
    """Colour levels for scores: the 0.5th to 99.5th percentile of the finite values, so one outlier
    (an attention sink's score) does not wash out every other tile."""
    finite = image[np.isfinite(image)]
    if finite.size == 0:
        return 0.0, 1.0
    low, high = np.percentile(finite, [0.5, 99.5])
    return float(low), float(max(high, low + 1e-6))
