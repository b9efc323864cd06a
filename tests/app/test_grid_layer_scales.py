"""With the linear kernel f_κ(x) = x on one layer only, that layer's weights are signed (about ±9 on the MLA twin
for this prompt) while every other layer's are softmax probabilities in [0, 1]. The Attention grid draws each kind
on its own colour scale, with a colour bar per scale labelled with its layers; on one scale for the whole grid,
every softmax tile was drawn in the colours of 0, near-white.

Expectation: the weights are the API's (`trace.attention`), the colour of a probability p is pyqtgraph's own
viridis map at p (the [0, 1] scale), the signed bar's levels are numpy's minimum and maximum of the linear
layer's weights; the pixels are those of the grid as drawn on screen, or the cells of the exported SVG.
"""
from __future__ import annotations

import re

import numpy as np
import pyqtgraph as pg
import pytest

import explorer
from explorer.app.panels.attention import AttentionPanel
from explorer.app.widgets import attention_exports
from explorer.drawing.export import export_attention

PROMPT = "To be, or not to be, that is the question: whether tis nobler"
LINEAR_LAYER = 1
TOLERANCE = 12           # per channel: the lookup table has 256 entries


@pytest.fixture(scope="module")
def model():
    return explorer.load("shakespeare-mla")


@pytest.fixture(scope="module")
def mixed_trace(model):
    return model.run(PROMPT, kernel="linear", kernel_layers=[LINEAR_LAYER]).trace


def viridis(p: float) -> np.ndarray:
    return pg.colormap.get("viridis").map(p, mode="byte")[:3].astype(int)


def rgb(colour) -> np.ndarray:
    return np.array([colour.red(), colour.green(), colour.blue()])


def grid_panel(open_panel, model, trace) -> AttentionPanel:
    panel = open_panel(AttentionPanel, model.info, (1000, 600))
    panel.session.set_trace(trace)
    return panel


def grid_bars(panel) -> list[pg.ColorBarItem]:
    """The colour bars the panel shows, but the large map's."""
    large = panel.large.colorbar
    return [item for view in panel.findChildren(pg.GraphicsView) for item in view.scene().items()
            if isinstance(item, pg.ColorBarItem) and item.isVisible() and item is not large]


def bar_label(bar: pg.ColorBarItem) -> str:
    axis = bar.getAxis("left")
    return axis.labelText if axis.isVisible() else ""


def large_probabilities(trace, layer: int, count: int = 6):
    """(head, query, key, p) of the layer's largest weights, off the first row (whose only weight is 1)."""
    weights = trace.attention(layer)                    # (H, T, T)
    assert weights.min() >= 0 and weights.max() <= 1 + 1e-6
    candidates = weights.copy()
    candidates[:, 0, :] = -1
    order = np.argsort(candidates, axis=None)[::-1][:count]
    return [(*map(int, np.unravel_index(i, weights.shape)), float(weights.flat[i])) for i in order]


def test_a_softmax_tile_is_drawn_in_its_probabilities_colours_beside_a_linear_layer(open_panel, model, mixed_trace):
    assert mixed_trace.attention(LINEAR_LAYER).min() < -1          # the linear layer's weights leave [0, 1]
    panel = grid_panel(open_panel, model, mixed_trace)
    picture = panel.grid_view.grab().toImage()
    n_tokens = mixed_trace.n_tokens
    for layer in (0, 2, 3):
        for head, query, key, p in large_probabilities(mixed_trace, layer):
            assert p > 0.4
            cell = (layer * (n_tokens + 1) + query, head * (n_tokens + 1) + key)    # tiles T × T, one-cell gutters
            point = panel.grid_view.mapFromScene(panel.grid.scene_pos_of(*cell))
            drawn = rgb(picture.pixelColor(point))
            assert drawn.min() < 150, (layer, head, query, key, p, drawn)            # not near-white
            assert np.abs(drawn - viridis(p)).max() <= TOLERANCE, (layer, head, query, key, p, drawn, viridis(p))


def test_the_legend_has_a_bar_for_each_scale_labelled_with_its_layers(open_panel, model, mixed_trace):
    panel = grid_panel(open_panel, model, mixed_trace)
    bars = {bar_label(bar): tuple(bar.levels()) for bar in grid_bars(panel)}
    linear = mixed_trace.attention(LINEAR_LAYER)
    assert set(bars) == {"layer L1", "layers L0, L2–3"}, bars
    assert bars["layer L1"] == pytest.approx((float(linear.min()), float(linear.max())), rel=1e-5)
    assert bars["layers L0, L2–3"] == (0.0, 1.0)


def test_a_softmax_grid_keeps_one_unlabelled_bar_from_0_to_1(open_panel, model):
    panel = grid_panel(open_panel, model, model.run(PROMPT).trace)
    assert [(bar_label(bar), tuple(bar.levels())) for bar in grid_bars(panel)] == [("", (0.0, 1.0))]


def _svg_fills(svg: str) -> np.ndarray:
    fills = re.findall(r'<rect [^>]*fill="#([0-9a-f]{6})"', svg)
    return np.array([[int(f[i:i + 2], 16) for i in (0, 2, 4)] for f in fills])


def test_the_exported_grid_draws_the_same_scales_and_legend(open_panel, model, mixed_trace, tmp_path, monkeypatch):
    panel = grid_panel(open_panel, model, mixed_trace)
    path = tmp_path / "grid.svg"
    monkeypatch.setattr(attention_exports.export_dialogs, "ask_attention_target",
                        lambda *args, **kwargs: (path, (900, 700), "light"))
    action = next(a for a in panel.make_export_actions() if "full grid" in a.text())
    action.trigger()
    svg = path.read_text(encoding="utf-8")
    texts = re.sub(r"\s+", " ", " ".join(re.findall(r"<text[^>]*>([^<]*)</text>", svg)))
    assert "layer L1" in texts and "layers L0, L2–3" in texts, texts
    fills = _svg_fills(svg)
    for layer in (0, 2, 3):
        for *_, p in large_probabilities(mixed_trace, layer, count=3):
            assert np.abs(fills - viridis(p)).max(axis=1).min() <= TOLERANCE, (layer, p, viridis(p))


def test_the_grid_export_outside_the_panel_draws_the_same_scales(qapp, mixed_trace, tmp_path):
    """export_attention is the one export the CLI, a long prompt's export and the animations call: its full grid
    has the panel's scales too (it drew every layer on one ±9 scale, softmax tiles near-white)."""
    path = export_attention(mixed_trace, tmp_path / "grid.svg", "all", "all", size=(900, 700))
    svg = path.read_text(encoding="utf-8")
    texts = re.sub(r"\s+", " ", " ".join(re.findall(r"<text[^>]*>([^<]*)</text>", svg)))
    assert "layer L1" in texts and "layers L0, L2–3" in texts, texts
    fills = _svg_fills(svg)
    for layer in (0, 2, 3):
        for *_, p in large_probabilities(mixed_trace, layer, count=3):
            assert np.abs(fills - viridis(p)).max(axis=1).min() <= TOLERANCE, (layer, p, viridis(p))
