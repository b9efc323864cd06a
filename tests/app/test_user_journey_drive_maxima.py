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

from explorer.app.panels.heatmap import Heatmap


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
