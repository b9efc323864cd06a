"""Exported figures open anywhere and scale: an SVG heat map is drawn as vector cells (up to
vector_cells.MAX_VECTOR_CELLS cells; a raster beyond), text grows with the asked size, and the grid's default
size keeps its tiles square and calls them block maxima only when they are."""
from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF
from PySide6.QtGui import QColor, QImage, QPainter
from PySide6.QtSvg import QSvgRenderer

from explorer.drawing import export
from explorer.drawing.figures import attention_figure
from tests.app.synthetic_trace import build_trace


def svg_pixels(path, size) -> QImage:
    """The SVG drawn by Qt's own SVG reader, a reader apart from the exporter."""
    image = QImage(*size, QImage.Format.Format_ARGB32)
    image.fill(QColor("white"))
    painter = QPainter(image)
    QSvgRenderer(str(path)).render(painter)
    painter.end()
    return image


def cell_centres(trace, size):
    figure = attention_figure(trace, 0, 1, *size)
    heatmap, view = figure.heatmaps[0], figure.heatmaps[0].plot.getViewBox()
    n = trace.n_tokens
    centres = {(r, c): view.mapViewToScene(QPointF(c, r)) for r in range(n) for c in range(n)}
    quarter = {(r, c): view.mapViewToScene(QPointF(c + 0.3, r + 0.3)) for r in range(n) for c in range(n)}
    figure.close()
    return heatmap, centres, quarter


def near(a: QColor, b: QColor, tolerance: int = 12) -> bool:
    return all(abs(x - y) <= tolerance for x, y in zip(a.getRgb()[:3], b.getRgb()[:3]))


def test_an_svg_heat_map_is_vector_cells_that_any_reader_draws_sharp(qtbot, tmp_path):
    trace, size = build_trace(n_layers=1, n_heads=2, prompt_len=17), (1000, 800)
    svg, png = tmp_path / "head.svg", tmp_path / "head.png"
    export.export_attention(trace, svg, 0, 1, size=size)
    export.export_attention(trace, png, 0, 1, size=size)
    text = svg.read_text()
    assert "<image" not in text, "the map (or its colour bar) is an embedded raster"
    assert text.count("<rect") >= 17                         # at least a run of cells per row
    drawn, reference = svg_pixels(svg, size), QImage(str(png))
    _, centres, quarter = cell_centres(trace, size)
    readers = [drawn]
    if shutil.which("rsvg-convert"):                         # librsvg, where it is installed, reads it too
        subprocess.run(["rsvg-convert", str(svg), "-o", str(tmp_path / "rsvg.png")], check=True, timeout=60)
        readers.append(QImage(str(tmp_path / "rsvg.png")))
    for image in readers:
        for (r, c), point in centres.items():
            expected = reference.pixelColor(int(point.x()), int(point.y()))
            at = image.pixelColor(int(point.x()), int(point.y()))
            assert near(at, expected), f"cell ({r}, {c}): {at.name()} against the PNG's {expected.name()}"
            off = quarter[(r, c)]                           # sharp: one colour across the cell
            assert near(image.pixelColor(int(off.x()), int(off.y())), at, 4), f"cell ({r}, {c}) is blurred"


def test_a_map_of_more_than_256_by_256_cells_stays_a_raster(qtbot, tmp_path):
    trace = build_trace(n_layers=1, n_heads=1, prompt_len=300, max_positions=512)
    path = tmp_path / "long.svg"
    export.export_attention(trace, path, 0, 0, size=(800, 700))
    text = path.read_text()
    assert text.count("<image") == 1 and text.count("<rect") < 1000     # the map raster, the bar in vector


def ink_box(image: QImage, x0: int, y0: int, x1: int, y1: int) -> tuple[int, int]:
    """(width, height) of the dark pixels' bounding box inside the rectangle."""
    pixels = np.array([[image.pixelColor(x, y).lightness() < 128 for x in range(x0, x1)] for y in range(y0, y1)])
    rows, cols = np.flatnonzero(pixels.any(axis=1)), np.flatnonzero(pixels.any(axis=0))
    return (int(cols[-1] - cols[0] + 1), int(rows[-1] - rows[0] + 1)) if rows.size else (0, 0)


def test_text_grows_with_the_asked_size(qtbot, tmp_path):
    trace = build_trace(n_layers=1, n_heads=2, prompt_len=9)
    boxes = {}
    for scale in (1, 2):
        width, height = 1000 * scale, 800 * scale
        path = tmp_path / f"head{scale}.png"
        export.export_attention(trace, path, 0, 1, size=(width, height))
        image = QImage(str(path))
        title = ink_box(image, 0, 0, width, int(0.04 * height))            # the title's line
        labels = ink_box(image, 0, int(0.3 * height), int(0.09 * width), int(0.9 * height))   # the query labels
        boxes[scale] = (title, labels)
    (title1, labels1), (title2, labels2) = boxes[1], boxes[2]
    assert title1[1] and labels1[0]
    assert title2[1] >= 1.6 * title1[1] and title2[0] >= 1.6 * title1[0], (title1, title2)
    assert labels2[0] >= 1.6 * labels1[0], (labels1, labels2)


def tile_aspect(figure, n_layers: int, n_heads: int) -> float:
    rect = figure.heatmaps[0].plot.getViewBox().sceneBoundingRect()
    return (rect.width() / n_heads) / (rect.height() / n_layers)


def test_the_grids_default_size_keeps_its_tiles_square(qtbot, tmp_path):
    for n_layers, n_heads in ((30, 9), (2, 4), (12, 12)):
        trace = build_trace(n_layers=n_layers, n_heads=n_heads, prompt_len=17)
        width, height = export.default_size(trace.model, "all", "all")
        figure = attention_figure(trace, "all", "all", width, height)
        assert 0.8 <= tile_aspect(figure, n_layers, n_heads) <= 1.25, (n_layers, n_heads, width, height)
        figure.close()
        path = tmp_path / "grid.png"
        export.export_attention(trace, path, "all", "all")                     # the size it offers
        assert (QImage(str(path)).width(), QImage(str(path)).height()) == (width, height)


def titles(figure) -> list[str]:
    return [item.text for item in figure.scene().items() if isinstance(item, pg.LabelItem) and item.text]


def test_the_grid_says_block_maxima_only_when_its_tiles_are(qtbot):
    short = attention_figure(build_trace(n_layers=2, n_heads=2, prompt_len=17), "all", "all", 800, 600)
    assert not any("block maxima" in title for title in titles(short)) and any("17 tokens" in t for t in titles(short))
    long = attention_figure(build_trace(n_layers=2, n_heads=2, prompt_len=120, max_positions=256),
                            "all", "all", 800, 600)
    assert any("block maxima" in title for title in titles(long))
    short.close()
    long.close()


def test_a_one_token_grid_says_one_token(qtbot):
    """The translator's cross-attention grid at the prefill (one target token) was titled "… weights A, 1 tokens"."""
    figure = attention_figure(build_trace(n_layers=2, n_heads=2, prompt_len=1), "all", "all", 800, 600)
    said = [title for title in titles(figure) if "token" in title]
    assert said and any("1 token" in title for title in said) and not any("1 tokens" in title for title in said), said
    figure.close()


def cell_rects(svg_path) -> list[dict]:
    """The filled rectangles of the heat map's cells as an SVG parser reads them, with their ancestors."""
    import xml.etree.ElementTree as ET

    root = ET.parse(svg_path).getroot()
    cells = [g for g in root.iter("{http://www.w3.org/2000/svg}g") if g.get("id", "").startswith("VectorCells")]
    assert cells, "no group of vector cells in the SVG"
    parents = {child: parent for parent in root.iter() for child in parent}
    rects = []
    for rect in cells[0].iter("{http://www.w3.org/2000/svg}rect"):
        chain, node = [], rect
        while node in parents:
            node = parents[node]
            chain.append(node)
        rects.append({"rect": rect, "ancestors": chain})
    return rects


def test_svg_cells_are_page_rectangles_with_their_own_fill(qtbot, tmp_path):
    import matplotlib

    trace, size = build_trace(n_layers=1, n_heads=2, prompt_len=7), (700, 600)
    path = tmp_path / "head.svg"
    export.export_attention(trace, path, 0, 1, size=size)
    weights = export.raw_attention(trace, 0, 1, None, "weights", False)
    viridis = matplotlib.colormaps["viridis"]               # the figure's colour map, from 0 to the maximum
    figure = attention_figure(trace, 0, 1, *size)
    view = figure.heatmaps[0].plot.getViewBox()
    rects = cell_rects(path)
    drawn = svg_pixels(path, size)
    for r in range(trace.n_tokens):
        for c in range(r + 1):                               # the causal cells; the others are masked
            # the axes put token i's cell centred on i
            top_left = view.mapViewToScene(QPointF(c - 0.5, r - 0.5))
            bottom_right = view.mapViewToScene(QPointF(c + 0.5, r + 0.5))
            centre = (top_left + bottom_right) / 2
            holding = [e for e in rects if float(e["rect"].get("x")) <= centre.x() <= float(e["rect"].get("x"))
                       + float(e["rect"].get("width")) and float(e["rect"].get("y")) <= centre.y()
                       <= float(e["rect"].get("y")) + float(e["rect"].get("height"))]
            assert len(holding) == 1, f"cell ({r}, {c}) at {centre} is not one rectangle in page coordinates"
            rect, ancestors = holding[0]["rect"], holding[0]["ancestors"]
            assert abs(float(rect.get("y")) - top_left.y()) < 0.6
            assert abs(float(rect.get("height")) - (bottom_right.y() - top_left.y())) < 0.6
            assert not any(a.get("transform") for a in ancestors), "a cell drawn through an enclosing transform"
            expected = QColor.fromRgbF(*viridis(weights[r, c] / np.nanmax(weights))[:3])
            assert near(QColor(rect.get("fill")), expected), f"cell ({r}, {c}): {rect.get('fill')} {expected.name()}"
            at = drawn.pixelColor(int(centre.x()), int(centre.y()))
            assert near(at, expected), f"Qt draws cell ({r}, {c}) {at.name()}, not {expected.name()}"
    figure.close()


def test_svg_colour_bar_is_page_rectangles_and_no_clip_hides_the_cells(qtbot, tmp_path):
    import xml.etree.ElementTree as ET

    path = tmp_path / "head.svg"
    export.export_attention(build_trace(n_layers=1, n_heads=2, prompt_len=7), path, 0, 1, size=(700, 600))
    root = ET.parse(path).getroot()
    groups = [g for g in root.iter("{http://www.w3.org/2000/svg}g") if g.get("id", "").startswith("VectorCells")]
    assert len(groups) == 2                                  # the map and its colour bar
    bar = list(groups[1].iter("{http://www.w3.org/2000/svg}rect"))
    assert len(bar) > 16 and all(r.get("fill", "none") != "none" and float(r.get("width")) > 1 for r in bar)
    heights = sorted(float(r.get("height")) for r in bar)
    assert heights[0] > 0.5 and float(bar[0].get("x")) > 0.6 * 700    # in page units, right of the map
    parents = {child: parent for parent in root.iter() for child in parent}
    for group in groups:                                     # ImageMagick's own reader draws nothing clipped
        node = group
        while node in parents:
            node = parents[node]
            assert node.get("clip-path") is None, "the cells sit inside a clip-path"


def test_rotated_labels_are_anchored_on_the_page(qtbot, tmp_path):
    import xml.etree.ElementTree as ET

    path = tmp_path / "head.svg"
    export.export_attention(build_trace(n_layers=1, n_heads=2, prompt_len=7), path, 0, 1, size=(700, 600))
    texts = {t.text.strip(): t for t in ET.parse(path).getroot().iter("{http://www.w3.org/2000/svg}text") if t.text}
    query = texts["query"]
    assert "rotate(-90)" in query.get("transform", ""), "the query label is not rotated on its own"
    assert (query.get("x"), query.get("y")) == ("0", "0")
    x, y = (float(v) for v in query.get("transform").split("translate(")[1].split(")")[0].split(","))
    assert 0 < x < 0.1 * 700 and 0.3 * 600 < y < 600, (x, y)
