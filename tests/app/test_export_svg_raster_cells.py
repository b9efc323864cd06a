"""An SVG's maps are vector rectangles while that stays sensible, and one exactly placed PNG each past it (drive20
m11: a layer's nine heads at 256 tokens were 124,000 <rect>, 13.9 MB, ~10 s in librsvg). Axes and text stay vector.

Expectation, independent of the exporter: each cell drawn by librsvg (rsvg-convert) has the colour viridis gives its
attention weight (matplotlib's viridis; the levels run 0 to 1, as row 0's one key has weight 1), one colour across
the cell; the big layer's file is small and holds one <image> per head.
"""
from __future__ import annotations

import subprocess

import numpy as np
from matplotlib import colormaps
from PySide6.QtCore import QPointF
from PySide6.QtGui import QColor, QImage

from explorer.drawing import export
from explorer.drawing.figures import attention_figure
from tests.app.synthetic_trace import build_trace


def drawn_by_rsvg(svg, tmp_path) -> QImage:
    png = tmp_path / (svg.stem + "_rsvg.png")
    subprocess.run(["rsvg-convert", str(svg), "-o", str(png)], check=True, timeout=120)
    return QImage(str(png))


def cells_match_viridis(trace, svg, size, head, tmp_path, n_cells=40) -> None:
    """rsvg's picture of `svg` has, at each sampled cell, viridis of its weight, the same across the cell."""
    weights = export.raw_attention(trace, 0, head)
    assert abs(np.nanmax(weights) - 1.0) < 1e-6                   # the levels' top: row 0 attends to itself alone
    figure = attention_figure(trace, 0, head, *size)
    view = figure.heatmaps[0].plot.getViewBox()
    image = drawn_by_rsvg(svg, tmp_path)
    rng = np.random.default_rng(1)
    n = weights.shape[0]
    rows = rng.integers(0, n, n_cells)
    for r, c in zip(rows, [int(rng.integers(0, r + 1)) for r in rows]):
        centre = view.mapViewToScene(QPointF(c, r))                # a cell is centred on its index
        off = view.mapViewToScene(QPointF(c + 0.3, r + 0.3))
        expected = QColor.fromRgbF(*colormaps["viridis"](float(weights[r, c]))[:3])
        at = image.pixelColor(int(centre.x()), int(centre.y()))
        assert all(abs(a - b) <= 12 for a, b in zip(at.getRgb()[:3], expected.getRgb()[:3])), \
            f"cell ({r}, {c}) weight {weights[r, c]:.3f}: {at.name()} drawn, viridis {expected.name()}"
        beside = image.pixelColor(int(off.x()), int(off.y()))
        assert all(abs(a - b) <= 4 for a, b in zip(at.getRgb()[:3], beside.getRgb()[:3])), f"cell ({r}, {c}) blurred"
    figure.close()


def test_a_small_map_stays_vector_rectangles_drawn_in_its_colours(qtbot, tmp_path):
    trace, size = build_trace(n_layers=1, n_heads=2, prompt_len=24), (1000, 800)
    svg = export.export_attention(trace, tmp_path / "small.svg", 0, 1, size=size)
    text = svg.read_text()
    assert "<image" not in text and text.count("<rect") >= 24
    cells_match_viridis(trace, svg, size, 1, tmp_path)


def test_a_large_map_is_one_exact_png_drawn_in_its_colours_with_vector_text(qtbot, tmp_path):
    trace, size = build_trace(n_layers=1, n_heads=1, prompt_len=200, max_positions=256), (1300, 1200)
    svg = export.export_attention(trace, tmp_path / "large.svg", 0, 0, size=size)
    text = svg.read_text()
    assert text.count("<image") == 1 and "image-rendering" in text
    assert text.count("<rect") < 1000 and "<text" in text            # the colour bar, frame and labels vector
    cells_match_viridis(trace, svg, size, 0, tmp_path)


def test_a_layers_nine_heads_at_256_tokens_are_a_small_file_quick_to_draw(qtbot, tmp_path):
    trace = build_trace(n_layers=1, n_heads=9, prompt_len=256, max_positions=512)
    svg = export.export_attention(trace, tmp_path / "layer.svg", 0, "all", size=(1000, 800))
    text = svg.read_text()
    assert text.count("<image") == 9 and text.count("<rect") < 1000
    # 256 x 256 cells x 9 heads at a byte a cell is 590 KB: the PNGs take less, where rectangles took 13.9 MB
    assert svg.stat().st_size < 256 * 256 * 9, svg.stat().st_size
    image = drawn_by_rsvg(svg, tmp_path)
    assert (image.width(), image.height()) == (1000, 800)
