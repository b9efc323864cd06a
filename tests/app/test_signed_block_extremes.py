"""Under the linear kernel f_κ(x) = x the weights A = Z⁻¹ S have either sign, so every map drawn smaller than it
is keeps each block's signed extreme (the entry furthest from 0, its sign kept): a block of negative weights is
drawn negative, in the diverging scale's negative colours, never as 0 or as its least negative weight. Under exp
(A ≥ 0) the blocks keep their maxima, as before.

Expectation: the dense map A of the trace (rebuilt from Q and K), reduced here by numpy block by block (NaN where
masked); colours computed from the colour bar's levels alone along pyqtgraph's CET-D1 map; the pixels are the
drawn image's. Covered: a long prompt's map (long_maps, rebuilt a block of rows at a time) and its export, the
same map grown a decoding step at a time (ReducedMaps), the all-heads grid's tiles of a short prompt and their
steps, and the dense reduction of a figure past 2,048 cells (display_reduced).
"""
from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
import pytest

N = 1100                      # 1100² entries: the prompt's maps are rebuilt on demand (a long prompt to the views)
LINEAR, SOFTMAX = 1, 0        # the layer run under the linear kernel, and the one that keeps the model's exp
TOLERANCE = 12                # per colour channel: the lookup table has 256 entries


def reference(dense: np.ndarray, block: int, signed: bool) -> np.ndarray:
    """Each block × block block's maximum, or (signed) its entry of largest magnitude, the positive one of a tie;
    NaN (masked) cells count for nothing, and a block of masked cells only is NaN."""
    rows, cols = math.ceil(dense.shape[0] / block), math.ceil(dense.shape[1] / block)
    padded = np.full((rows * block, cols * block), np.nan)
    padded[: dense.shape[0], : dense.shape[1]] = dense
    cells = padded.reshape(rows, block, cols, block).transpose(0, 2, 1, 3).reshape(rows, cols, -1)
    seen = np.isfinite(cells)
    if signed:
        size = np.where(seen, np.abs(cells), -1.0)
        largest = size.max(axis=2, keepdims=True)
        out = np.where(seen & (size == largest), cells, -np.inf).max(axis=2)
    else:
        out = np.where(seen, cells, -np.inf).max(axis=2)
    out[~seen.any(axis=2)] = np.nan
    return out


def masked_dense(trace, layer: int, head: int, step: int | None = None) -> np.ndarray:
    return np.where(trace.mask(layer, step), trace.attention_head(layer, head, step), np.nan).astype(np.float64)


def negative_blocks(dense: np.ndarray, block: int) -> np.ndarray:
    """Blocks whose every seen cell is negative (bool), by the same block cut as `reference`."""
    highest = reference(dense, block, signed=False)
    return np.isfinite(highest) & (highest < 0)


def assert_close(got: np.ndarray, expected: np.ndarray) -> None:
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
    # the linear kernel's Z, a sum of signed scores, nearly cancels in places: weights of ±40 carry float32
    # rounding of the two ways of computing them (row blocks here, the whole map there) ×40, so relative
    np.testing.assert_allclose(got[np.isfinite(got)], expected[np.isfinite(expected)], rtol=1e-4, atol=1e-5)


@pytest.fixture(scope="module")
def stepped():
    """A prompt of N tokens under the linear kernel in layer LINEAR, then three decoding steps: the traces of the
    prompt and of each step."""
    from explorer.core.decode import Decoder, RecordOptions
    from explorer.core.intervention import Intervention, Kernel, KernelChoice
    from explorer.core.runtime import from_tensors
    from tests.core.conftest import make_hf_model

    hf_model = make_hf_model("llama")
    config = dict(hf_model.config.to_dict(), max_position_embeddings=N + 16)
    decoder = Decoder(from_tensors(config, hf_model.state_dict()), RecordOptions(), capacity=N + 8)
    decoder.set_intervention(Intervention(kernels=(KernelChoice(Kernel("linear"), (LINEAR,)),)))
    traces = [decoder.prefill((np.arange(N) * 11) % 96)]
    traces += [decoder.step() for _ in range(3)]
    return traces


def test_a_long_maps_blocks_keep_their_signed_extremes_and_softmax_its_maxima(stepped):
    from explorer.views.long_maps import block_maxima, is_long

    trace = stepped[0]
    assert trace.steps[0].layers[LINEAR].attn.on_demand and is_long(trace)
    for block in (2, 16):
        for layer, signed in ((LINEAR, True), (SOFTMAX, False)):
            dense = masked_dense(trace, layer, 1)
            got = block_maxima(trace, layer, [1], block, threads=2)
            assert_close(got, reference(dense, block, signed))
    negative = negative_blocks(masked_dense(trace, LINEAR, 1), 2)
    assert negative.any(), "the map has 2 × 2 blocks of negative weights only"
    assert np.all(block_maxima(trace, LINEAR, [1], 2)[negative] < 0), "a block of negative weights not drawn negative"


def test_the_exported_long_map_draws_negative_blocks_in_the_negative_colours(qtbot, stepped):
    from explorer.drawing.figures import attention_figure

    trace = stepped[0]
    figure = attention_figure(trace, LINEAR, 1, 900, 800)
    qtbot.addWidget(figure)
    heatmap = figure.heatmaps[0]
    shown = heatmap.image.image
    dense = masked_dense(trace, LINEAR, 1)
    block = math.ceil(dense.shape[0] / shown.shape[0])
    assert block > 1, "the export draws the long map reduced to blocks"
    expected = reference(dense, block, signed=True)
    assert_close(shown, expected)
    levels = tuple(heatmap.colorbar.levels())
    assert levels[0] == pytest.approx(float(np.nanmin(expected)), rel=1e-4) and levels[0] < 0
    top = max(-levels[0], levels[1])
    negative = negative_blocks(dense, block)
    rows, cols = np.nonzero(negative)
    strongest = int(np.argmin(expected[rows, cols]))
    for row, col in ((rows[strongest], cols[strongest]), (rows[0], cols[0])):
        value = float(expected[row, col])
        colour = heatmap.pixel_color(int(row), int(col))
        drawn = np.array([colour.red(), colour.green(), colour.blue()])
        wanted = pg.colormap.get("CET-D1").map((value / top + 1) / 2, mode="byte")[:3].astype(int)
        assert np.abs(drawn - wanted).max() <= TOLERANCE, (row, col, value, drawn, wanted)


def test_the_exported_softmax_map_is_drawn_as_before(qtbot, stepped):
    from explorer.drawing.figures import attention_figure

    trace = stepped[0]
    figure = attention_figure(trace, SOFTMAX, 1, 900, 800)
    qtbot.addWidget(figure)
    heatmap = figure.heatmaps[0]
    dense = masked_dense(trace, SOFTMAX, 1)
    block = math.ceil(dense.shape[0] / heatmap.image.image.shape[0])
    expected = reference(dense, block, signed=False)
    assert_close(heatmap.image.image, expected)
    assert tuple(heatmap.colorbar.levels()) == pytest.approx((0.0, float(np.nanmax(expected))), rel=1e-5)
    assert heatmap.colormap.name == "viridis"


@pytest.mark.parametrize("block", [16, 2])
def test_a_map_grown_a_step_at_a_time_equals_the_whole_reduction(stepped, block):
    """ReducedMaps keeps the prompt's map and merges each step's new rows into it: 1100 = 68 × 16 + 12, so the
    steps' rows share a block row with the prompt's last 12 (and at block 2 start block rows of their own)."""
    from explorer.views.long_maps import ReducedMaps, block_maxima

    maps = ReducedMaps()
    for step, trace in enumerate(stepped):
        for layer, signed in ((LINEAR, True), (SOFTMAX, False)):
            got = maps.get(trace, layer, [1], block)
            dense = masked_dense(trace, layer, 1)
            assert_close(got, reference(dense, block, signed))
            if step:
                np.testing.assert_array_equal(got, block_maxima(trace, layer, [1], block))


def test_the_grid_tiles_keep_signed_extremes_step_after_step():
    """The all-heads grid of a short prompt (stored maps, reduced as their records come): every step's tiles."""
    import explorer
    from explorer.views.grid import downsampled_attention, mosaic

    model = explorer.load("shakespeare-gqa")
    prompt = "To be, or not to be, that is the question: whether 'tis nobler in the mind to suffer " * 2
    trace = model.run(prompt, steps=3, kernel="linear", kernel_layers=[LINEAR]).trace
    for step in range(trace.n_steps):
        for layer, signed in ((LINEAR, True), (SOFTMAX, False)):
            tiles = downsampled_attention(trace, layer, upto_step=step)
            block = math.ceil(trace.mask(layer, step).shape[0] / tiles.shape[1])
            assert block > 1
            for head in range(trace.model.n_heads):
                dense = masked_dense(trace, layer, head, step)
                np.testing.assert_allclose(tiles[head], reference(dense, block, signed), rtol=1e-5, atol=1e-6)
                if signed:
                    negative = negative_blocks(dense, block)
                    assert negative.any() and np.all(tiles[head][negative] < 0)
    linear = downsampled_attention(trace, LINEAR)
    image = mosaic(trace).image
    assert float(np.nanmin(image)) == pytest.approx(float(np.nanmin(linear))) and np.nanmin(image) < 0


def test_a_dense_figure_past_its_cell_limit_keeps_the_signed_extremes():
    from explorer.views.maps import display_reduced

    rng = np.random.default_rng(5)
    matrix = rng.normal(size=(100, 70)).astype(np.float32)
    matrix[:6, :6] = -np.abs(matrix[:6, :6])                       # blocks of negative weights only
    matrix[np.triu_indices(100, 1, 70)] = np.nan                   # masked above the diagonal
    shown, factor = display_reduced(matrix, max_cells=20, signed=True)
    assert factor == 5
    np.testing.assert_array_equal(shown, reference(matrix, 5, signed=True).astype(np.float32))
    assert shown[0, 0] < 0
    weights = np.abs(matrix)                                       # weights ≥ 0 (softmax): maxima, as before
    np.testing.assert_array_equal(display_reduced(weights, max_cells=20, signed=True)[0],
                                  reference(weights, 5, signed=False).astype(np.float32))
    np.testing.assert_array_equal(display_reduced(matrix, max_cells=20)[0],
                                  reference(matrix, 5, signed=False).astype(np.float32))


def test_the_panels_long_map_draws_negative_blocks_in_the_negative_colours(qtbot, stepped):
    """The Attention panel's large head at a long prompt (computed off the GUI thread, long_head)."""
    from explorer.app.panels import AttentionPanel
    from explorer.app.state.session import Session
    from tests.app.shared_window import make

    trace = stepped[0]
    panel = make(qtbot, Session(), AttentionPanel)
    with qtbot.waitSignal(panel.long_head.shown, timeout=30000):
        panel.session.set_trace(trace)
        panel.session.select(layer=LINEAR, head=1)
    shown = panel.large.image.image
    dense = masked_dense(trace, LINEAR, 1)
    block = math.ceil(dense.shape[0] / shown.shape[0])
    assert block > 1 and "block maxima" in panel.large.plot.titleLabel.text
    expected = reference(dense, block, signed=True)
    assert_close(shown, expected)
    levels = tuple(panel.large.colorbar.levels())
    assert levels[0] == pytest.approx(float(np.nanmin(expected)), rel=1e-4) and levels[0] < 0
    top = max(-levels[0], levels[1])
    rows, cols = np.nonzero(negative_blocks(dense, block))
    for row, col in zip(rows[:: max(1, rows.size // 5)], cols[:: max(1, rows.size // 5)]):
        value = float(expected[row, col])
        colour = panel.large.pixel_color(int(row), int(col))
        drawn = np.array([colour.red(), colour.green(), colour.blue()])
        wanted = pg.colormap.get("CET-D1").map((value / top + 1) / 2, mode="byte")[:3].astype(int)
        assert np.abs(drawn - wanted).max() <= TOLERANCE, (row, col, value, drawn, wanted)
