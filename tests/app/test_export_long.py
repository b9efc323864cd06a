"""One head of an 8,000-token trace exported: PNG and SVG drawn from block maxima over the real
extent, .npy exact. The trace comes from a tiny model, so the map is rebuilt on demand from Q and K."""
from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtGui import QImage

from explorer.drawing import export
from explorer.drawing.figures import attention_figure
from explorer.views.maps import display_reduced

N = 8000


@pytest.fixture(scope="module")
def long_trace():
    from explorer.core.decode import Decoder, RecordOptions
    from explorer.core.runtime import from_tensors
    from tests.core.conftest import make_hf_model

    hf_model = make_hf_model("llama")
    loaded = from_tensors(dict(hf_model.config.to_dict(), max_position_embeddings=N + 8), hf_model.state_dict())
    return Decoder(loaded, RecordOptions(dtype="float16"), capacity=N + 1).prefill(np.arange(N) % 96)


def test_block_maxima_follow_the_definition():
    rng = np.random.default_rng(0)
    matrix = rng.random((10, 7)).astype(np.float32)
    matrix[:4, :4] = np.nan                                              # one block wholly masked
    reduced, factor = display_reduced(matrix, max_cells=4)
    assert factor == 3 and reduced.shape == (4, 3)
    for i in range(4):
        for j in range(3):
            block = matrix[3 * i: 3 * i + 3, 3 * j: 3 * j + 3]
            expected = np.nanmax(block) if np.isfinite(block).any() else np.nan
            np.testing.assert_equal(reduced[i, j], expected)
    assert display_reduced(matrix, max_cells=10)[1] == 1


def test_an_8000_token_head_exports_as_png_svg_and_exact_npy(qtbot, tmp_path, long_trace):
    exact = long_trace.attention_head(1, 2)
    assert exact.shape == (N, N) and long_trace.steps[0].layers[1].attn.on_demand
    npy = export.export_attention(long_trace, tmp_path / "head.npy", 1, 2)
    np.testing.assert_array_equal(np.load(npy), exact)
    figure = attention_figure(long_trace, 1, 2, 1000, 800)
    heatmap = figure.heatmaps[0]
    assert heatmap.image.image.shape[0] <= 2048                          # drawn reduced
    rect = heatmap.image.mapRectToParent(heatmap.image.boundingRect())
    assert (rect.width(), rect.height()) == (N, N)                       # over the real extent: axes count tokens
    figure.close()
    png = export.export_attention(long_trace, tmp_path / "head.png", 1, 2, size=(1000, 800))
    assert (QImage(str(png)).width(), QImage(str(png)).height()) == (1000, 800)
    svg = export.export_attention(long_trace, tmp_path / "head.svg", 1, 2, size=(1000, 800))
    text = svg.read_text(encoding="utf-8")
    assert f"{N}×{N}" in text and "block maxima" in text and svg.stat().st_size < 20e6
