"""Under the linear kernel f_κ(x) = x, A = Z⁻¹ S has negative weights (rows still sum to 1). The Attention
panel's maps and their exports then draw A on a diverging scale centred on 0 from the map's minimum, so a
weight of -7.1 is no longer drawn as 0; under exp (every A ≥ 0) the levels stay [0, max].

Expectation: the colour of a value v is computed here from the colour bar's levels (low, high) alone, as the
position (v / m + 1) / 2 along pyqtgraph's own CET-D1 map, m = max(-low, high); the lowest weight is
numpy's minimum of the trace's A; the pixels are the drawn image's.
"""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
import pytest

import explorer
from explorer.app.panels.attention import AttentionPanel
from explorer.drawing.figures import attention_figure

PROMPT = "To be, or not to be, that is the question:"
LAYER = 1
TOLERANCE = 12          # per channel: the lookup table has 256 entries


@pytest.fixture(scope="module")
def model():
    return explorer.load("shakespeare-gqa")


def attention_panel(open_panel, model, trace) -> AttentionPanel:
    panel = open_panel(AttentionPanel, model.info, (900, 500))
    panel.session.set_trace(trace)
    return panel


def diverging_colour(value: float, levels) -> np.ndarray:
    top = max(-levels[0], levels[1])
    return pg.colormap.get("CET-D1").map((value / top + 1) / 2, mode="byte")[:3].astype(int)


def rgb(colour) -> np.ndarray:
    return np.array([colour.red(), colour.green(), colour.blue()])


def check_negative_cell(heatmap, matrix: np.ndarray) -> None:
    """The colour bar starts at the map's minimum, and the lowest cell is drawn in the diverging map's colour
    for its value, far from the colour of 0 and from the colour of the cell nearest 0."""
    low = float(np.nanmin(matrix))
    assert low < 0
    levels = tuple(heatmap.colorbar.levels())
    assert levels[0] == pytest.approx(low, rel=1e-6) and levels[1] == pytest.approx(float(np.nanmax(matrix)))
    row, col = np.unravel_index(np.nanargmin(matrix), matrix.shape)
    near_zero = np.unravel_index(np.nanargmin(np.abs(matrix)), matrix.shape)
    drawn = rgb(heatmap.pixel_color(row, col))
    assert np.abs(drawn - diverging_colour(low, levels)).max() <= TOLERANCE, (drawn, low, levels)
    assert np.abs(drawn - diverging_colour(0.0, levels)).max() > 100
    assert np.abs(drawn - rgb(heatmap.pixel_color(*near_zero))).max() > 100


@pytest.fixture(scope="module")
def linear_trace(model):
    return model.run(PROMPT, kernel="linear", kernel_layers=[LAYER]).trace


def test_a_negative_weight_is_drawn_below_zero_in_the_large_map_and_the_grid(open_panel, model, linear_trace):
    weights = linear_trace.attention(LAYER)
    head, i, j = np.unravel_index(np.argmin(weights), weights.shape)
    panel = attention_panel(open_panel, model, linear_trace)
    panel.session.select(layer=LAYER, head=int(head))
    check_negative_cell(panel.large, panel.large.image.image)
    assert float(panel.large.image.image[i, j]) == pytest.approx(float(weights[head, i, j]))
    panel._hover_large(int(i), int(j))
    assert f"A[{i}, {j}] = {float(weights[head, i, j]):.6g}" in panel.readout.text()     # the true value
    check_negative_cell(panel.grid, panel.grid.image.image)
    assert float(np.nanmin(panel.grid.image.image)) == pytest.approx(float(weights.min()))
    panel.session.select(layer=0)                                   # layer 0 keeps exp: back to [0, max]
    assert linear_trace.attention(0).min() >= 0
    assert tuple(panel.large.colorbar.levels()) == pytest.approx((0.0, float(linear_trace.attention(0)[head].max())))
    assert panel.large.colormap.name == "viridis"


@pytest.mark.parametrize("head", [4, "all"])
def test_the_exported_head_and_layer_figures_draw_the_negative_weights(qtbot, linear_trace, head):
    figure = attention_figure(linear_trace, LAYER, head, 800, 600)
    qtbot.addWidget(figure)
    weights = np.concatenate([h.image.image.ravel() for h in figure.heatmaps])
    low = float(np.nanmin(weights))
    assert low == pytest.approx(float(linear_trace.attention(LAYER)[[4] if head == 4 else slice(None)].min()))
    for heatmap in figure.heatmaps:
        matrix = heatmap.image.image
        row, col = np.unravel_index(np.nanargmin(matrix), matrix.shape)
        levels = tuple(heatmap.image.levels)
        assert levels[0] == pytest.approx(low)
        drawn = rgb(heatmap.pixel_color(row, col))
        assert np.abs(drawn - diverging_colour(float(matrix[row, col]), levels)).max() <= TOLERANCE


def test_under_exp_the_levels_are_zero_to_the_largest_weight(open_panel, model):
    trace = model.run(PROMPT).trace
    panel = attention_panel(open_panel, model, trace)
    panel.session.select(layer=LAYER, head=4)
    weights = trace.attention(LAYER)
    assert weights.min() >= 0
    assert tuple(panel.large.colorbar.levels()) == pytest.approx((0.0, float(weights[4].max())))
    assert tuple(panel.grid.colorbar.levels()) == (0.0, 1.0)
    assert panel.large.colormap.name == panel.grid.colormap.name == "viridis"
