"""long_maps: block maxima of one head computed a block of query rows at a time, over the keys those rows
see, equal the maxima of the trace's dense map, for causal, sliding-window and soft-capped families,
with decoding steps after the prompt, for weights, scores and the mean of heads."""
from __future__ import annotations

import math

import numpy as np
import pytest

from explorer.views.long_maps import ReducedMaps, block_maxima, exact_cell, is_long

N = 1100                      # 1100² entries: the prompt's maps are rebuilt on demand


def dense_block_max(dense: np.ndarray, block: int) -> np.ndarray:
    rows, cols = math.ceil(dense.shape[0] / block), math.ceil(dense.shape[1] / block)
    padded = np.full((rows * block, cols * block), np.nan)
    padded[: dense.shape[0], : dense.shape[1]] = dense
    blocks = padded.reshape(rows, block, cols, block).transpose(0, 2, 1, 3).reshape(rows, cols, -1)
    out = np.full((rows, cols), np.nan)
    seen = np.isfinite(blocks).any(axis=2)
    out[seen] = np.nanmax(blocks[seen], axis=1)
    return out


@pytest.fixture(scope="module", params=["mistral", "gemma3", "qwen3"])
def stepped(request):
    from explorer.core.decode import Decoder, RecordOptions
    from explorer.core.runtime import from_tensors
    from tests.core.conftest import make_hf_model

    hf_model = make_hf_model(request.param)
    config = dict(hf_model.config.to_dict(), max_position_embeddings=N + 16)
    decoder = Decoder(from_tensors(config, hf_model.state_dict()), RecordOptions(), capacity=N + 8)
    decoder.prefill((np.arange(N) * 11) % 96)
    decoder.step()
    return decoder.step()                                  # the prompt on demand, then two stored rows


@pytest.mark.parametrize("values", ["weights", "scores"])
def test_block_maxima_equal_those_of_the_dense_map(stepped, values):
    trace = stepped
    assert trace.steps[0].layers[0].attn.on_demand and is_long(trace)
    for layer in range(trace.model.n_layers):
        mask = trace.mask(layer)
        dense = trace.attention_head(layer, 1) if values == "weights" else trace.scores(layer, 1)
        dense = np.where(mask, dense, np.nan).astype(np.float64)
        for block in (1, 16):
            got = block_maxima(trace, layer, [1], block, values=values, threads=2)
            expected = dense_block_max(dense, block)
            np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
            np.testing.assert_allclose(got[np.isfinite(got)], expected[np.isfinite(expected)], rtol=2e-5, atol=1e-6)
        row, col = N + 1, N - 2                            # the last decoding step's row
        assert exact_cell(trace, layer, [1], row, col, values=values) == pytest.approx(dense[row, col], rel=2e-5)


def test_a_window_and_the_mean_of_heads(stepped):
    trace, layer = stepped, 1
    mask = trace.mask(layer)
    mean = np.where(mask, trace.attention(layer).mean(axis=0), np.nan)
    heads = list(range(trace.model.n_heads))
    window = (700, 1102, 650, 1000)
    got = block_maxima(trace, layer, heads, 1, window=window)
    np.testing.assert_allclose(got, mean[700:1102, 650:1000], rtol=2e-5, atol=1e-7)
    blocks = block_maxima(trace, layer, heads, 64)
    expected = dense_block_max(mean, 64)
    np.testing.assert_allclose(blocks[np.isfinite(blocks)], expected[np.isfinite(expected)], rtol=2e-5, atol=1e-7)


def test_reduced_maps_are_kept_per_trace_within_their_limit_and_cancel_between_blocks(stepped):
    from explorer.views.long_maps import Cancelled

    tiles = ReducedMaps(limit=2)
    with pytest.raises(Cancelled):
        tiles.get(stepped, 0, [0], 64, cancelled=lambda: True)
    assert tiles.cached(stepped, 0, [0], 64) is None
    first = tiles.get(stepped, 0, [0], 64)
    assert tiles.cached(stepped, 0, [0], 64) is first and tiles.get(stepped, 0, [0], 64) is first
    tiles.get(stepped, 0, [1], 64)
    tiles.get(stepped, 1, [0], 64)                         # a third map: the least recent goes
    assert tiles.cached(stepped, 0, [0], 64) is None and tiles.cached(stepped, 1, [0], 64) is not None


@pytest.mark.parametrize("values", ["weights", "scores"])
def test_the_synchronous_grid_reduces_an_on_demand_prompt_without_its_dense_maps(stepped, values, monkeypatch):
    from explorer.core.trace import AttentionRecord
    from explorer.views.grid import mosaic, tile_block

    original = AttentionRecord.weights_of

    def refuse(self, head=None):
        assert not self.on_demand, "the dense map of a prompt rebuilt on demand was built"
        return original(self, head)

    monkeypatch.setattr(AttentionRecord, "weights_of", refuse)
    grid = mosaic(stepped, values=values)
    block = tile_block(N + 2, N + 2)
    for layer in range(stepped.model.n_layers):
        mask = stepped.mask(layer)
        dense = original(stepped.steps[0].layers[layer].attn, 2) if values == "weights" else None
        full = stepped.scores(layer, 2) if values == "scores" else np.zeros(mask.shape, np.float32)
        if values == "weights":                                     # the prompt's rows, then the steps' stored rows
            full[:N, :N] = dense
            for index, step in enumerate(stepped.steps[1:], start=1):
                full[N + index - 1, step.layers[layer].attn.kv_positions] = original(step.layers[layer].attn, 2)[0]
        expected = dense_block_max(np.where(mask, full, np.nan).astype(np.float64), block)
        drawn = grid.tile(layer, 2)
        np.testing.assert_array_equal(np.isnan(drawn), np.isnan(expected))
        np.testing.assert_allclose(drawn[np.isfinite(drawn)], expected[np.isfinite(expected)], rtol=2e-5, atol=1e-6)


def test_an_earlier_step_is_the_kept_prompt_and_its_own_rows(stepped):
    from explorer.views import long_maps

    maps = ReducedMaps()
    last = maps.get(stepped, 1, [2], 16)                     # the prompt, kept apart, then both steps' rows
    before = long_maps.COUNTS["row_blocks"]
    earlier = maps.get(stepped, 1, [2], 16, upto_step=1)     # back one step
    assert long_maps.COUNTS["row_blocks"] - before == 1      # the one step's row, not the prompt again
    np.testing.assert_array_equal(earlier, block_maxima(stepped, 1, [2], 16, upto_step=1))
    np.testing.assert_array_equal(last, block_maxima(stepped, 1, [2], 16))
