"""views.grid.Mosaic keeps one TileLayout, made with the grid and again at each wrap (it made one anew at every call
of the six methods that read it: a 30 x 9 grid's picking, outlines, marks and labels each built their own).

Expectation: the layout read is the same object between wraps, describes the grid's image (its image_shape is the
image's shape, written out by hand for the wrap) and a tile placed is picked back as its head.
"""
from __future__ import annotations

import numpy as np

from explorer.views.grid import blank_mosaic


def test_the_mosaic_keeps_one_layout_until_it_wraps():
    n_layers, n_heads, (r, c) = 3, 9, (8, 10)                # a tile's cells a pixel each
    grid = blank_mosaic(n_layers, n_heads, (r, c))
    layout = grid.layout
    grid.tile_at(0, 0), grid.row_labels(), grid.head_centres()
    assert grid.layout is layout
    assert grid.image.shape == layout.image_shape() == (n_layers * (r + 1) - 1, n_heads * (c + 1) - 1)
    grid.wrap(4)                                               # 9 heads, 4 a row: 3 bands a layer
    assert grid.layout is not layout and grid.layout.per_row == 4
    assert grid.image.shape == grid.layout.image_shape() == (n_layers * 3 * (r + 1) - 1, 4 * (c + 1) - 1)
    wrapped = grid.layout
    grid.wrap(4)
    assert grid.layout is wrapped, "the same wrap made a layout anew"
    grid.place(2, 8, np.ones((r, c), dtype=np.float32))
    top, left = (2 * 3 + 2) * (r + 1), 0 * (c + 1)            # layer 2's third band, its first column
    assert grid.tile_at(top, left) == (2, 8) and np.all(grid.image[top:top + r, left:left + c] == 1.0)
