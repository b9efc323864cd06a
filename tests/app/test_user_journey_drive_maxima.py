"""A long map drawn as block maxima must still show each block's maximum on screen.

On a bare X screen SmolLM2's 3,954-token map (989 x 989 blocks of 4 x 4 in about 400 px) was one flat dark colour:
pyqtgraph's automatic downsampling of an image larger than its view takes the MEAN of neighbouring pixels (and plain
scaling samples one of them), so a lone bright block (a sink, a diagonal, an induction stripe one block wide) is
averaged away. The title promises maxima; the screen must show the brightest value somewhere. (A bright region of
200 x 200 blocks does show: the grab is sound.)
"""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg

from explorer.drawing.heatmap import Heatmap


def test_a_lone_bright_block_keeps_its_colour_when_the_map_is_larger_than_the_view(qtbot):
    view = pg.GraphicsLayoutWidget()
    qtbot.addWidget(view)
    view.resize(420, 420)
    heatmap = Heatmap(view.ci, colorbar=False)
    blocks = np.zeros((1000, 1000), dtype=np.float32)
    blocks[500, 500] = 1.0                                   # one block at the top of the colour scale
    heatmap.set_matrix(np.tril(blocks), levels=(0.0, 1.0), extent=(4000, 4000))
    view.show()
    qtbot.waitExposed(view)
    qtbot.waitUntil(lambda: heatmap.plot.getViewBox().width() > 100, timeout=5000)
    image = view.grab().toImage()
    top = tuple(int(255 * c) for c in pg.colormap.get("viridis").map(1.0, mode="float")[:3])
    pixels = np.array([[image.pixelColor(x, y).getRgb()[:3] for x in range(image.width())]
                       for y in range(image.height())], dtype=float)
    nearest = float(np.min(np.abs(pixels - np.array(top)).sum(axis=2)))
    assert nearest < 60, f"no pixel within 60 of the colour of 1.0 {top} (nearest is {nearest:.0f} away)"


def _nearest_to_top(view, colour) -> tuple[float, tuple[int, int]]:
    """How far the closest pixel of the grab is from `colour` (summed RGB), and where it is (x, y)."""
    image = view.grab().toImage()
    pixels = np.array([[image.pixelColor(x, y).getRgb()[:3] for x in range(image.width())]
                       for y in range(image.height())], dtype=float)
    distance = np.abs(pixels - np.array(colour)).sum(axis=2)
    y, x = np.unravel_index(np.argmin(distance), distance.shape)
    return float(distance[y, x]), (int(x), int(y))


def test_the_bright_block_stays_where_it_is_as_the_view_shrinks(qtbot):
    """Reduced again at the new size (a smaller view needs larger blocks), and drawn where its cells are."""
    view = pg.GraphicsLayoutWidget()
    qtbot.addWidget(view)
    view.resize(500, 500)
    heatmap = Heatmap(view.ci, colorbar=False)
    blocks = np.zeros((1000, 1000), dtype=np.float32)
    blocks[700, 300] = 1.0                                   # real rows 2800-2803, columns 1200-1203
    heatmap.set_matrix(blocks, levels=(0.0, 1.0), extent=(4000, 4000))
    view.show()
    qtbot.waitExposed(view)
    top = tuple(int(255 * c) for c in pg.colormap.get("viridis").map(1.0, mode="float")[:3])
    for side in (500, 260):
        view.resize(side, side)
        qtbot.waitUntil(lambda side=side: abs(view.width() - side) < 2 and heatmap.plot.getViewBox().width() > 50,
                        timeout=5000)
        distance, (x, y) = _nearest_to_top(view, top)
        where = view.mapFromScene(heatmap.scene_pos_of(2801.5, 1201.5))
        assert distance < 60, f"at {side} px no pixel within 60 of the colour of 1.0 (nearest {distance:.0f})"
        assert abs(x - where.x()) <= 2 and abs(y - where.y()) <= 2, f"drawn at {(x, y)}, its cells at {where}"


def _long_map(qtbot, side: int = 520) -> tuple[pg.GraphicsLayoutWidget, Heatmap]:
    """SmolLM2's long map as the drive saw it: numbered labels, some of them long byte tokens."""
    view = pg.GraphicsLayoutWidget()
    qtbot.addWidget(view)
    view.resize(side, side)
    heatmap = Heatmap(view.ci)
    labels = [f"{i} " + ("␣<0xE2><0…" if i % 200 == 0 and i else "#") for i in range(4000)]
    heatmap.set_matrix(np.zeros((1000, 1000), np.float32), (0.0, 1.0), labels, labels, extent=(4000, 4000))
    heatmap.plot.setLabels(left="query", top="key")
    view.show()
    qtbot.waitExposed(view)
    qtbot.waitUntil(lambda: heatmap.plot.getViewBox().width() > 100, timeout=5000)
    return view, heatmap


def test_the_query_labels_end_right_of_the_axis_title(qtbot):
    """Each query label, right-aligned at the ticks, ends clear of the title "query" on the axis's left."""
    from PySide6.QtGui import QFontMetricsF
    _view, heatmap = _long_map(qtbot)
    axis = heatmap.axes["left"]
    title = axis.label.mapRectToParent(axis.label.boundingRect())
    (lo, hi) = axis.range
    values = [v for _, level in axis.tickValues(lo, hi, axis.height()) for v in level]
    metrics = QFontMetricsF(axis.style["tickFont"] or axis.font())
    for text in axis.tickStrings(values, 1.0, 1.0):
        left = axis.width() - axis.style["tickTextOffset"][0] - metrics.horizontalAdvance(text)
        assert left >= title.right(), f"{text!r} starts at x {left:.0f}, under the title (to x {title.right():.0f})"


def test_the_first_key_label_is_drawn_whole(qtbot):
    """The upright "0 #" at the map's left edge lies inside its axis: drawn past the axis's bounds, its left half
    was lost whenever the screen repainted only the axis (what Qt repaints of an item is its bounds). Rendering
    just the axis's corner must show as many lit pixels as the same text drawn alone."""
    from PySide6.QtCore import QPointF, QRectF
    from PySide6.QtGui import QColor, QImage, QPainter
    _view, heatmap = _long_map(qtbot)
    axis = heatmap.axes["top"]
    axis.set_labels(["0 #"] + [" " * 12] * 3999)                # upright, and only the first one shows
    qtbot.waitUntil(lambda: axis.upright and axis.picture is not None, timeout=5000)
    reference = QImage(60, 60, QImage.Format.Format_ARGB32)
    reference.fill(QColor("black"))
    painter = QPainter(reference)
    painter.setFont(axis.style["tickFont"] or axis.font())
    painter.setPen(axis.textPen().color())
    painter.translate(30, 50)
    painter.rotate(-90)
    painter.drawText(QPointF(0, 5), "0 #")
    painter.end()
    expected = sum(reference.pixelColor(x, y).lightness() > 60 for x in range(60) for y in range(60))
    bounds = axis.sceneBoundingRect()
    inside = _lit(axis.scene(), QRectF(bounds.left(), bounds.top(), 40, bounds.height() - 5))
    assert inside >= 0.8 * expected, f"{inside} lit pixels of the first key label inside its axis, {expected} alone"


def _lit(scene, source) -> int:
    """Pixels brighter than the dark background in `source` of the scene, rendered alone."""
    from PySide6.QtCore import QRectF
    from PySide6.QtGui import QColor, QImage, QPainter
    image = QImage(int(source.width()), int(source.height()), QImage.Format.Format_ARGB32)
    image.fill(QColor("black"))
    painter = QPainter(image)
    scene.render(painter, QRectF(image.rect()), source)
    painter.end()
    return sum(image.pixelColor(x, y).lightness() > 60 for x in range(image.width()) for y in range(image.height()))


def _map_pixels(qtbot, matrix: np.ndarray, levels: tuple[float, float], side: int = 220) -> np.ndarray:
    """The RGB pixels inside the map's frame (two pixels in from it) of `matrix` drawn in a `side` px view with
    no extent: how a short map and the all-heads grid are drawn."""
    view = pg.GraphicsLayoutWidget()
    qtbot.addWidget(view)
    view.resize(side, side)
    heatmap = Heatmap(view.ci, colorbar=False)
    heatmap.set_matrix(matrix, levels=levels)
    view.show()
    qtbot.waitExposed(view)
    qtbot.waitUntil(lambda: heatmap.plot.getViewBox().width() > 100, timeout=5000)
    frame = view.mapFromScene(heatmap.plot.getViewBox().sceneBoundingRect()).boundingRect().adjusted(2, 2, -2, -2)
    image = view.grab().toImage()
    return np.array([[image.pixelColor(x, y).getRgb()[:3] for x in range(frame.left(), frame.right())]
                     for y in range(frame.top(), frame.bottom())], dtype=float)


def _colour(value: float, levels: tuple[float, float] = (0.0, 1.0)) -> np.ndarray:
    """viridis's RGB for `value` on the scale `levels`."""
    position = (value - levels[0]) / (levels[1] - levels[0])
    return np.array(pg.colormap.get("viridis").map(position, mode="float")[:3]) * 255


def _distance(pixels: np.ndarray, colour: np.ndarray) -> float:
    """How far (summed RGB) the pixel closest to `colour` is from it."""
    return float(np.min(np.abs(pixels - colour).sum(axis=2)))


def test_a_short_map_drawn_smaller_than_it_is_keeps_its_peak_and_its_small_weight(qtbot):
    """1,000 × 1,000 cells in about 200 px (5 × 5 cells a pixel): the peak 1.0 stays the top colour, and a lone
    weight of 0.15 among zeros stays its own colour. Averaged, they were drawn as 0.04 and 0.006, the zeros' colour."""
    weights = np.zeros((1000, 1000), dtype=np.float32)
    weights[300, 700] = 1.0
    weights[700, 200] = 0.15
    pixels = _map_pixels(qtbot, weights, (0.0, 1.0))
    assert pixels.shape[0] < 400 and pixels.shape[1] < 400, "the view must be smaller than the matrix"
    assert _distance(pixels, _colour(1.0)) < 20, "the peak is not drawn in the top colour"
    assert np.abs(_colour(0.15) - _colour(0.0)).sum() > 40       # the small weight's colour is not the zeros'
    assert _distance(pixels, _colour(0.15)) < 12, "the small weight vanished into the zeros"


def test_a_diverging_map_keeps_its_negative_peak(qtbot):
    """On a scale from -1 to 1 a block shows its entry furthest from 0: the lone -1.0 stays the bottom colour
    (maxima alone would draw the block's 0; averaging, -0.04)."""
    values = np.zeros((1000, 1000), dtype=np.float32)
    values[400, 400] = -1.0
    values[600, 800] = 1.0
    pixels = _map_pixels(qtbot, values, (-1.0, 1.0))
    assert _distance(pixels, _colour(-1.0, (-1.0, 1.0))) < 20, "the negative peak is not drawn in the bottom colour"
    assert _distance(pixels, _colour(1.0, (-1.0, 1.0))) < 20, "the positive peak is not drawn in the top colour"


def test_the_first_row_and_column_of_a_long_map_are_drawn_in_their_colour(qtbot):
    """The first keys' column (the attention sink) and the first row, one block about a pixel wide, are drawn in the
    colour of 1.0 along their whole length. The axes' tick marks, drawn 3 px into the map, hid them at every label."""
    view = pg.GraphicsLayoutWidget()
    qtbot.addWidget(view)
    view.resize(520, 520)
    heatmap = Heatmap(view.ci)
    labels = [f"{i} #" for i in range(3946)]
    blocks = np.zeros((987, 987), np.float32)
    blocks[:, 0] = blocks[0, :] = 1.0                       # the first column and the first row of blocks
    heatmap.set_matrix(blocks, (0.0, 1.0), labels, labels, extent=(3946, 3946))
    heatmap.plot.setLabels(left="query", top="key")
    view.show()
    qtbot.waitExposed(view)
    qtbot.waitUntil(lambda: heatmap.plot.getViewBox().width() > 100 and heatmap.image.picture.isVisible(),
                    timeout=5000)
    frame = view.mapFromScene(heatmap.image.sceneBoundingRect()).boundingRect()
    image = view.grab().toImage()
    first_column = np.array([image.pixelColor(frame.left(), y).getRgb()[:3]
                             for y in range(frame.top(), frame.bottom() - 1)], dtype=float)
    first_row = np.array([image.pixelColor(x, frame.top()).getRgb()[:3]
                          for x in range(frame.left(), frame.right() - 1)], dtype=float)
    corner = np.array(image.pixelColor(frame.left(), frame.top()).getRgb()[:3], dtype=float)
    assert np.abs(corner - _colour(1.0)).sum() < 20, f"the first block is drawn {corner}, not {_colour(1.0)}"
    for name, line in (("column", first_column), ("row", first_row)):
        wrong = np.flatnonzero(np.abs(line - _colour(1.0)).sum(axis=1) >= 20)
        assert wrong.size == 0, f"{wrong.size} pixels of the first {name} are not the colour of 1.0 (at {wrong[:8]})"
