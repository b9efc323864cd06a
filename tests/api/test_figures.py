"""run.show / run.show_grid: matplotlib figures (Agg, no Qt) of the numbers run.attention gives."""
from __future__ import annotations

import re

import numpy as np
import pytest

import explorer


@pytest.fixture(scope="module")
def run(bundled):
    return bundled.run("To be, or not to be", steps=2)


def drawn_colour(shown, row: int, col: int) -> np.ndarray:
    """The RGBA pixel at the centre of cell (row, col), read from the rendered canvas."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(shown.figure)
    canvas.draw()
    pixels = np.asarray(canvas.buffer_rgba())                           # (height, width, 4), origin top left
    axes = shown.figure.axes[0]
    x, y = axes.transData.transform((col, row))
    return pixels[pixels.shape[0] - int(round(y)), int(round(x))]


def test_a_head_is_drawn_in_the_colours_of_its_weights(run):
    import matplotlib

    shown = run.show(1, 3)
    weights = run.attention(1, 3)                                       # (N_Q, N_KV), 0 where masked
    mask = run.trace.mask(1)
    np.testing.assert_array_equal(np.isnan(shown.matrix), ~mask)
    np.testing.assert_array_equal(shown.matrix[mask], weights[mask])
    assert shown.levels == (0.0, float(weights.max()))
    viridis = matplotlib.colormaps["viridis"]
    for row, col in [(0, 0), (4, 2), (len(weights) - 1, 1), (len(weights) - 1, len(weights) - 1)]:
        expected = np.array(viridis(weights[row, col] / weights.max(), bytes=True))
        assert np.abs(drawn_colour(shown, row, col).astype(int) - expected).max() <= 3
    background = drawn_colour(shown, 0, len(weights) - 1)               # masked: nothing drawn
    assert background.tolist() == [255, 255, 255, 255]


def test_inline_png_and_svg_carry_labels_and_a_colour_bar(run):
    shown = run.show(0, 0)
    assert shown._repr_png_().startswith(b"\x89PNG\r\n\x1a\n")
    svg = shown._repr_svg_()
    texts = re.findall(r"<text[^>]*>([^<]*)</text>", svg)                 # labels stay text, not paths
    n = len(run.tokens)
    assert texts[:n] == run.tokens and texts[n + 1: 2 * n + 1] == run.tokens   # keys along the top, queries down
    assert "0.0" in texts and texts[-1] == "A"                          # the colour bar's ticks and label
    assert len(shown.figure.axes) == 2                                  # the map and its colour bar
    assert shown.rows == shown.columns and len(shown.rows) == len(run.ids)


def test_the_grid_holds_every_layer_and_head(run):
    shown = run.show_grid()
    info = run.model.info
    t = len(run.ids)
    assert shown.matrix.shape == (info.n_layers * (t + 1) - 1, info.n_heads * (t + 1) - 1)
    tile = shown.matrix[(t + 1) * 2: (t + 1) * 2 + t, (t + 1) * 5: (t + 1) * 5 + t]   # layer 2, head 5
    mask = run.trace.mask(2)
    np.testing.assert_array_equal(tile[mask], run.attention(2, 5)[mask])
    assert shown.rows == [f"L{i}" for i in range(info.n_layers)]
    assert shown.columns == [f"H{i}" for i in range(info.n_heads)]


def test_a_softmax_layer_beside_a_linear_kernel_layer_keeps_its_own_scale():
    """With f_κ(x) = x on layer 1 only, its weights are signed; every other layer is drawn on [0, 1] (viridis at
    the probability), with a colour bar per scale naming its layers (one shared scale drew them near its middle)."""
    import matplotlib

    mixed = explorer.load("shakespeare-mla").run("To be, or not to be, that is the question", kernel="linear",
                                                  kernel_layers=[1])
    shown = mixed.show_grid()
    t = len(mixed.ids)
    assert len(shown.figure.axes) == 3                                   # the map and two colour bars
    labels = [axes.get_ylabel() for axes in shown.figure.axes[1:]]
    assert labels == ["weights A, layer L1", "weights A, layers L0, L2–3"], labels
    viridis = matplotlib.colormaps["viridis"]
    for layer in (0, 2, 3):
        weights = mixed.attention(layer, 0)
        row, col = np.unravel_index(np.argmax(weights), weights.shape)
        expected = np.array(viridis(float(weights[row, col]), bytes=True))
        drawn = drawn_colour(shown, (t + 1) * layer + row, col).astype(int)
        assert np.abs(drawn - expected).max() <= 3, (layer, weights[row, col], drawn, expected)


def test_save_writes_png_or_svg_only(run, tmp_path):
    import explorer

    assert run.show(0, 1).save(tmp_path / "a.svg").read_text().lstrip().startswith("<?xml")
    with pytest.raises(explorer.ExplorerError, match="must end in .png or .svg"):
        run.show(0, 1).save(tmp_path / "a.jpg")


def test_an_svg_draws_the_cells_as_vector_shapes_that_another_reader_renders_sharp(run, tmp_path):
    import shutil
    import subprocess

    shown = run.show(1, 3)
    svg = shown._repr_svg_()
    assert "<image" not in svg, "the map is an embedded raster"
    n = len(run.attention(1, 3))
    assert svg.count("<path") >= n * (n + 1) // 2            # a shape at least per visible cell
    if shutil.which("rsvg-convert"):                         # librsvg, where installed, draws it
        path = tmp_path / "head.svg"
        path.write_text(svg)
        out = subprocess.run(["rsvg-convert", str(path)], capture_output=True, timeout=60, check=True)
        assert out.stdout.startswith(b"\x89PNG")
