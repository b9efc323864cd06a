"""An SVG attention map of 53 tokens, drawn by librsvg (rsvg-convert) and by ImageMagick (convert), shows the
same cells as the PNG export of the same map; a map of 256 × 256 cells, past vector_cells.MAX_VECTOR_CELLS, is
written in seconds as one embedded PNG (pyqtgraph's exporter took two minutes to parse and correct one painted
rectangle at a time; as rectangles, a layer of such maps was 13.9 MB, drive20 m11)."""
from __future__ import annotations

import subprocess
import time

from PySide6.QtCore import QPointF
from PySide6.QtGui import QColor, QImage

from explorer.drawing import export
from explorer.drawing.figures import attention_figure
from tests.app.synthetic_trace import build_trace

SIZE = (1000, 800)
READERS = {"rsvg-convert": lambda svg, png: ["rsvg-convert", str(svg), "-o", str(png)],
           "ImageMagick": lambda svg, png: ["convert", str(svg), str(png)]}


def near(a: QColor, b: QColor, tolerance: int = 12) -> bool:
    return all(abs(x - y) <= tolerance for x, y in zip(a.getRgb()[:3], b.getRgb()[:3]))


def test_both_readers_draw_the_53_token_map_as_the_png_shows_it(qtbot, tmp_path):
    trace = build_trace(n_layers=1, n_heads=2, prompt_len=53)
    svg, png = tmp_path / "head.svg", tmp_path / "head.png"
    export.export_attention(trace, svg, 0, 1, size=SIZE)
    export.export_attention(trace, png, 0, 1, size=SIZE)
    assert "<image" not in svg.read_text(), "the map or its bar is an embedded raster"
    reference = QImage(str(png))
    figure = attention_figure(trace, 0, 1, *SIZE)
    view = figure.heatmaps[0].plot.getViewBox()
    n = trace.n_tokens
    centres = {(r, c): view.mapViewToScene(QPointF(c, r)) for r in range(n) for c in range(n)}
    off_centre = {(r, c): view.mapViewToScene(QPointF(c + 0.3, r - 0.3)) for r in range(n) for c in range(n)}
    figure.close()
    for reader, command in READERS.items():
        drawn_path = tmp_path / f"{reader}.png"
        subprocess.run(command(svg, drawn_path), check=True, timeout=120, capture_output=True)
        drawn = QImage(str(drawn_path))
        assert (drawn.width(), drawn.height()) == SIZE, reader
        for (r, c), point in centres.items():           # every cell, the masked ones (the background) included
            expected = reference.pixelColor(int(point.x()), int(point.y()))
            at = drawn.pixelColor(int(point.x()), int(point.y()))
            assert near(at, expected), f"{reader}: cell ({r}, {c}) {at.name()}, the PNG's {expected.name()}"
            off = off_centre[(r, c)]
            assert near(drawn.pixelColor(int(off.x()), int(off.y())), at, 4), f"{reader}: cell ({r}, {c}) blurred"


def test_a_256_token_map_is_one_png_written_in_seconds(qtbot, tmp_path):
    trace = build_trace(n_layers=1, n_heads=1, prompt_len=256, max_positions=512)
    path = tmp_path / "long.svg"
    started = time.perf_counter()
    export.export_attention(trace, path, 0, 0, size=SIZE)
    took = time.perf_counter() - started
    text = path.read_text()
    assert text.count("<image") == 1 and text.count("<rect") < 1000      # the map a PNG, its bar rectangles
    assert took < 20, f"a 256-token SVG took {took:.1f} s"
