"""The SVG of "all heads of this layer" draws every head's cells where the PNG of the same export draws them.

Seen exporting SmolLM2's layer 0 (9 heads, 3 x 3 tiles, 9 tokens) at 800 x 600 from the window, and opening
the SVG with rsvg-convert and ImageMagick: the first row of tiles drew its nine rows of cells in the height of
eight (the last row white), the others ran their last row past the tile's frame. The cells were placed by the
tiles' view transforms as they stood before the figure was laid out at the export's size.
"""
from __future__ import annotations

import subprocess

from PySide6.QtCore import QPointF
from PySide6.QtGui import QColor, QImage

from explorer.drawing import export
from explorer.drawing.figures import attention_figure
from tests.app import synthetic_trace
from tests.app.synthetic_trace import build_trace

SIZE = (800, 600)
# Nine-letter words, as SmolLM2's '␣capital' or '␣France': the upright key labels leave each tile flat, and the
# figure names the outer tiles only and evens the rows out (figures._name_outer_tiles_only) after the first layout.
LONG_WORDS = tuple(f" {word}" for word in ("capitals", "provinces", "Frenchmen", "travelled", "elsewhere",
                                           "countries", "mountains", "Portugal,", "afternoon"))
READERS = {"rsvg-convert": lambda svg, png: ["rsvg-convert", str(svg), "-o", str(png)],
           "ImageMagick": lambda svg, png: ["convert", str(svg), str(png)]}


def near(a: QColor, b: QColor, tolerance: int = 12) -> bool:
    return all(abs(x - y) <= tolerance for x, y in zip(a.getRgb()[:3], b.getRgb()[:3]))


def test_every_tile_of_a_layers_svg_draws_its_cells_as_the_png_does(qtbot, tmp_path, monkeypatch):
    monkeypatch.setattr(synthetic_trace, "WORDS", LONG_WORDS)
    trace = build_trace(n_layers=1, n_heads=9, prompt_len=9)
    svg, png = tmp_path / "layer.svg", tmp_path / "layer.png"
    export.export_attention(trace, svg, 0, "all", size=SIZE)
    export.export_attention(trace, png, 0, "all", size=SIZE)
    reference = QImage(str(png))
    figure = attention_figure(trace, 0, "all", *SIZE)
    n = trace.n_tokens
    centres = {(head, r, c): heatmap.plot.getViewBox().mapViewToScene(QPointF(c, r))
               for head, heatmap in enumerate(figure.heatmaps) for r in range(n) for c in range(n)}
    figure.close()
    assert len({head for head, _, _ in centres}) == 9
    for reader, command in READERS.items():
        drawn_path = tmp_path / f"{reader}.png"
        subprocess.run(command(svg, drawn_path), check=True, timeout=120, capture_output=True)
        drawn = QImage(str(drawn_path))
        assert (drawn.width(), drawn.height()) == SIZE, reader
        wrong = []
        for (head, r, c), point in centres.items():      # every cell, the masked ones (the background) included
            expected = reference.pixelColor(int(point.x()), int(point.y()))
            at = drawn.pixelColor(int(point.x()), int(point.y()))
            if not near(at, expected):
                wrong.append(f"head {head} cell ({r}, {c}) {at.name()}, the PNG's {expected.name()}")
        assert not wrong, f"{reader}: {len(wrong)} of {len(centres)} cells differ: {wrong[:5]}"
