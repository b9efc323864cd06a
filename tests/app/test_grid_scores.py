"""The all-heads grid honours the weights/scores toggle: score tiles are block maxima of Trace.scores."""
from __future__ import annotations

import numpy as np
import pytest

from explorer.app.panels.attention import AttentionPanel
from explorer.app.state.session import Session
from explorer.views.grid import downsampled_attention, mosaic, score_levels
from tests.app.synthetic_trace import build_trace


def block_maxima(dense: np.ndarray, mask: np.ndarray, block: int, fill: float) -> np.ndarray:
    heads, n = dense.shape[0], dense.shape[1]
    blocks = -(-n // block)
    padded = np.full((heads, blocks * block, blocks * block), fill, np.float32)
    padded[:, :n, :n] = dense
    allowed = np.zeros((blocks * block, blocks * block), bool)
    allowed[:n, :n] = mask
    expected = padded.reshape(heads, blocks, block, blocks, block).max(axis=(2, 4))
    expected[:, ~allowed.reshape(blocks, block, blocks, block).any(axis=(1, 3))] = np.nan
    return expected


@pytest.mark.parametrize("sliding_window", [None, 3])
def test_score_tiles_are_block_maxima_of_trace_scores(sliding_window):
    trace = build_trace(n_layers=2, n_heads=4, n_kv_heads=2, prompt_len=9, steps=4, sliding_window=sliding_window)
    for layer in (0, 1):
        for step in (0, 2, None):
            tiles = downsampled_attention(trace, layer, tile=4, upto_step=step, values="scores")
            dense = np.stack([trace.scores(layer, h, step) for h in range(4)])        # (H, T, T), -inf masked
            expected = block_maxima(dense, trace.mask(layer, step), 4, -np.inf)
            np.testing.assert_allclose(tiles, expected, rtol=1e-5, atol=1e-5, equal_nan=True)
            assert np.nanmin(tiles) < 0 or np.nanmax(tiles) > 1                      # not the weights again


def test_the_grid_follows_the_weights_scores_toggle(qtbot):
    session = Session()
    panel = AttentionPanel(session)
    qtbot.addWidget(panel)
    panel.resize(900, 600)
    panel.show()
    trace = build_trace(n_layers=3, n_heads=4, n_kv_heads=2, prompt_len=7, steps=2)
    session.set_trace(trace)
    weights = panel.grid.image.image.copy()
    np.testing.assert_array_equal(weights, mosaic(trace).image)
    panel.values_box.setCurrentIndex(1)                                              # scores S
    scores = mosaic(trace, values="scores").image
    np.testing.assert_array_equal(panel.grid.image.image, scores)
    assert tuple(panel.grid.image.levels) == pytest.approx(score_levels(scores))
    panel.values_box.setCurrentIndex(0)
    panel.scale_box.setCurrentIndex(1)                                               # log colour scale
    assert np.nanmax(panel.grid.image.image) <= 0 and np.nanmin(panel.grid.image.image) >= -6


def test_the_full_grid_export_draws_scores_when_asked(qtbot, tmp_path):
    from explorer.drawing.figures import attention_figure

    trace = build_trace(n_layers=2, n_heads=4, prompt_len=6, steps=1)
    figure = attention_figure(trace, "all", "all", 500, 400, values="scores")
    np.testing.assert_array_equal(figure.heatmaps[0].image.image, mosaic(trace, values="scores").image)
    figure.close()
