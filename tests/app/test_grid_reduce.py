"""The grid's block-max reduction (rows first, columns by reshaping an unbroken run of key positions)
equals the plain sorted `reduceat` it replaced, for any row offset, block, ring order or gap in the keys;
tiles grown one decoding step at a time equal tiles computed from an empty cache."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from explorer.views import grid
from explorer.views.grid import _block_max, _reduce
from tests.app.synthetic_trace import build_trace


def reference(weights, mask, positions, row, block):
    """The reduction as first written: sort the columns, then reduceat over both axes."""
    columns = positions // block
    order = np.argsort(columns, kind="stable")
    columns, weights, mask = columns[order], weights[:, :, order], mask[:, order]
    u_cols, col_starts = np.unique(columns, return_index=True)
    u_rows, row_starts = np.unique((row + np.arange(weights.shape[1])) // block, return_index=True)
    weights = np.maximum.reduceat(np.maximum.reduceat(weights, col_starts, axis=2), row_starts, axis=1)
    mask = np.logical_or.reduceat(np.logical_or.reduceat(mask, col_starts, axis=1), row_starts, axis=0)
    return u_rows, u_cols, weights, mask


@st.composite
def records(draw):
    heads, n_new = draw(st.integers(1, 3)), draw(st.integers(1, 40))
    row, block = draw(st.integers(0, 50)), draw(st.sampled_from([1, 2, 4, 8, 16]))
    n_kv = draw(st.integers(1, 60))
    first = draw(st.integers(0, 30))
    kind = draw(st.sampled_from(["run", "ring", "gaps"]))
    positions = np.arange(first, first + n_kv)
    if kind == "ring":                                         # a sliding window's ring: rotated
        positions = np.roll(positions, draw(st.integers(0, n_kv)))
    elif kind == "gaps":
        positions = np.sort(draw(st.lists(st.integers(0, 200), min_size=n_kv, max_size=n_kv, unique=True)))
        positions = np.asarray(positions)
    seed = draw(st.integers(0, 2**16))
    rng = np.random.default_rng(seed)
    weights = rng.standard_normal((heads, n_new, n_kv)).astype(np.float32)
    mask = rng.random((n_new, n_kv)) < 0.7
    return weights, mask, positions, row, block


@settings(max_examples=150, deadline=None)
@given(records())
def test_the_reduction_equals_sorted_reduceat(record):
    got, expected = _reduce(*record), reference(*record)
    for a, b in zip(got, expected):
        np.testing.assert_array_equal(a, b)


def test_block_max_cuts_at_absolute_block_boundaries():
    values = np.arange(10)                                     # absolute indices 3..12, blocks of 4
    np.testing.assert_array_equal(_block_max(values, 0, 3, 4), [0, 4, 8, 9])
    np.testing.assert_array_equal(_block_max(values.astype(bool), 0, 0, 5), [True, True])


@pytest.mark.parametrize("values", ["weights", "scores"])
@pytest.mark.parametrize("sliding_window", [None, 5])
def test_tiles_grown_step_by_step_equal_tiles_computed_afresh(values, sliding_window):
    """Each step merges only its new rows into the layer's tiles of the step before; going back or
    doubling the block starts afresh. Every order gives what an empty cache gives."""
    trace = build_trace(n_layers=2, n_heads=4, n_kv_heads=2, prompt_len=7, steps=30, sliding_window=sliding_window)

    def afresh(step):
        grid._CACHE.clear()
        return grid.downsampled_attention(trace, 1, tile=8, upto_step=step, values=values)

    expected = {step: afresh(step) for step in range(trace.n_steps)}
    grid._CACHE.clear()
    for step in [*range(trace.n_steps), 12, 3, 4, 20, 21]:          # forward, back, forward again
        got = grid.downsampled_attention(trace, 1, tile=8, upto_step=step, values=values)
        np.testing.assert_array_equal(got, expected[step])


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 3), st.integers(2, 40), st.integers(0, 50), st.sampled_from([1, 2, 4, 8, 16]),
       st.integers(0, 30), st.sampled_from([None, 1, 3, 7]), st.integers(0, 2**16))
def test_packed_rows_reduce_like_the_dense_weights(heads, n_new, row, block, extra_keys, window, seed):
    """A prefill's weights are reduced from their packed rows, never unpacked: same blocks as dense."""
    from explorer.core.trace import packed

    n_kv = n_new + extra_keys                                   # earlier keys in the cache, then the new ones
    positions = np.arange(row, row + n_kv) if row >= 0 else np.arange(n_kv)
    query = positions[extra_keys:][:, None]
    mask = positions[None, :] <= query
    if window:
        mask &= positions[None, :] > query - window
    weights = np.random.default_rng(seed).random((heads, n_new, n_kv)).astype(np.float32) * mask
    plan = grid._packed_plan(mask, positions, row + extra_keys, block)
    assert plan is not None
    got = grid._reduce_packed(packed(weights, mask), plan)
    expected = _reduce(weights, mask, positions, row + extra_keys, block)
    for a, b in zip(got, expected):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("sliding_window", [None, 5])
@pytest.mark.parametrize("values", ["weights", "scores"])
def test_a_grid_grown_step_by_step_equals_each_layer_reduced_alone(values, sliding_window):
    """The grid merges a decoding step's row for all layers of one kind at once; every image equals the
    layers' own tiles computed from an empty cache, laid out with NaN gutters."""
    trace = build_trace(n_layers=4, n_heads=3, n_kv_heads=1, prompt_len=5, steps=40, sliding_window=sliding_window,
                        max_positions=64)
    grid._CACHE.clear()
    for step in [*range(trace.n_steps), 30, 31, 12, 13]:           # through block changes, then back
        got = grid.mosaic(trace, tile=8, upto_step=step, values=values)
        cached = dict(grid._CACHE)
        grid._CACHE.clear()
        tiles = [grid.downsampled_attention(trace, layer, tile=8, upto_step=step, values=values)
                 for layer in range(trace.model.n_layers)]
        grid._CACHE.clear()
        grid._CACHE.update(cached)
        r, c = tiles[0].shape[1:]
        assert got.tile_shape == (r, c)
        for layer, heads in enumerate(tiles):
            for head in range(trace.model.n_heads):
                np.testing.assert_array_equal(got.tile(layer, head), heads[head])
        gutters = np.ones(got.image.shape, bool)
        rows, columns = got.tile_px                                  # a tile's pixels: its cells, or blocks of them
        for layer in range(trace.model.n_layers):
            for head in range(trace.model.n_heads):
                top, left = got.tile_origin(layer, head)
                gutters[top:top + rows, left:left + columns] = False
        assert np.isnan(got.image[gutters]).all()
