"""The all-heads grid's wrap of a layer's heads onto rows of as many as the width holds (drive21 m13, m5): where
each head's tile sits, that its pixels stay the attention weights, and how many heads a row takes.

Expectations: the wrap's layout written out by hand (layer l, head h at tile row l·B + h // k, column h mod k, one
pixel of gutter between tiles) against Mosaic's pixels and picking; the tiles equal each head's attention weights
(views.maps.attention_matrix, the trace's own); the tile sides of each wrap worked out by hand.
"""
from __future__ import annotations

import numpy as np

from explorer.app.widgets.tile_fit import heads_per_row
from explorer.views.grid import blank_mosaic, mosaic
from explorer.views.maps import attention_matrix
from tests.app.synthetic_trace import build_trace


def test_wrapped_tiles_sit_where_the_layout_puts_them_and_are_picked_back():
    n_layers, n_heads, (r, c), k = 2, 5, (8, 9), 2         # a tile's cells a pixel each
    grid = blank_mosaic(n_layers, n_heads, (r, c))
    tiles = {(l, h): 100.0 * l + 10.0 * h + np.arange(r * c, dtype=np.float32).reshape(r, c)
             for l in range(n_layers) for h in range(n_heads)}
    for (l, h), tile in tiles.items():
        grid.place(l, h, tile)
    unwrapped = grid.image.copy()
    grid.wrap(k)
    bands = 3                                                        # 5 heads, 2 a row
    assert grid.image.shape == (n_layers * bands * (r + 1) - 1, k * (c + 1) - 1)
    covered = np.zeros(grid.image.shape, dtype=bool)
    for (l, h), tile in tiles.items():
        top, left = (l * bands + h // k) * (r + 1), (h % k) * (c + 1)
        np.testing.assert_array_equal(grid.image[top:top + r, left:left + c], tile)
        covered[top:top + r, left:left + c] = True
        for y in range(top, top + r):
            for x in range(left, left + c):
                assert grid.tile_at(y, x) == (l, h)
    assert np.isnan(grid.image[~covered]).all(), "a gutter or the empty slot is drawn"
    empty = ((0 * bands + 2) * (r + 1), 1 * (c + 1))                  # layer 0's sixth slot: no head 5
    assert grid.tile_at(*empty) is None
    assert grid.tile_at(r, 0) is None and grid.tile_at(0, c) is None     # gutters
    assert grid.layer_block(1) == (bands * (r + 1), 0, bands * (r + 1) - 1, k * (c + 1) - 1)
    assert grid.head_labels() == ["H0", "H1"]
    centres = [(r - 1) / 2 + band * (r + 1) for band in range(6)]
    assert grid.row_labels() == (["L0", "+2", "+4", "L1", "+2", "+4"], centres)
    assert grid.head_centres() == [(c - 1) / 2, (c + 1) + (c - 1) / 2]
    grid.wrap(None)
    np.testing.assert_array_equal(grid.image, unwrapped)


def test_wrapped_grid_tiles_are_the_attention_weights():
    trace = build_trace(n_layers=3, n_heads=9, n_kv_heads=3, prompt_len=6, steps=1)
    grid = mosaic(trace)
    grid.wrap(4)
    for layer in range(3):
        for head in range(9):
            weights = attention_matrix(trace, layer, head)                   # (T, T), masked cells NaN
            drawn = grid.tile(layer, head)
            finite = np.isfinite(weights)
            np.testing.assert_allclose(drawn[finite], weights[finite], atol=1e-6)
            assert np.isnan(drawn[~finite]).all()


def test_heads_wrap_into_rows_that_fit():
    # the translator's step 0: 1 layer, 4 heads of 1 x 1 cells, a one-cell gutter, 150 x 250 px, tiles >= 24 px.
    # Side for k heads a row: min(150 / (2k - 1), 250 / (2 ceil(4 / k) - 1)): k=1 36, k=2 50, k=3 30, k=4 21.
    assert heads_per_row(1, 4, (1, 1), (150, 250), 15, 24) == 2
    assert heads_per_row(1, 4, (1, 1), (250, 400), 15, 24) == 2          # a row of 4 at 36 px is a 36 px plot
    # ... which keeps its row once it is 120 px tall: 3 layers, 900 x 400 px: min(900 / 7, 400 / 5) = 80 px a tile
    assert heads_per_row(3, 4, (1, 1), (900, 400), 15, 24) is None
    # 30 layers x 9 heads of 6 x 6 cells never fit 300 x 400: as many a row as fill 300 - 15 px at 48 px or more.
    # A row of k: (300 - 15) * 6 / (7k - 1) >= 48 -> 7k - 1 <= 35.6 -> k <= 5.
    assert heads_per_row(30, 9, (6, 6), (300, 400), 15, 48) == 5
    assert heads_per_row(30, 9, (6, 6), (700, 400), 15, 48) is None      # 9 a row fill 685 px at 64 px
    # At 460 px, 8 a row fit ((460 - 15) * 6 / 55 = 48.5 px), 9 do not: two bands of 5 and 4, not of 8 and 1.
    assert heads_per_row(30, 9, (6, 6), (460, 400), 15, 48) == 5
    assert heads_per_row(3, 4, (1, 1), (18, 400), 15, 24) is None         # not laid out yet: no head fits
