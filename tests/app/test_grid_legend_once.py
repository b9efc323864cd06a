"""The all-heads grid is read once per redraw: GridLegend.show computes the grid's drawn image (its log10, its
levels: a pass over every cell) once and hands it to every colour scale, where it was computed again for the
scales and for each scale's image (score_levels twice, log10 of the whole grid twice, the weight range once a
scale). The pixels drawn are the grid's own values (or their log10), computed here with numpy."""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
import pytest

from explorer.drawing.grid_legend import GridLegend
from explorer.drawing.heatmap import Heatmap
from explorer.views import maps
from explorer.views.grid import blank_mosaic

N_LAYERS, N_HEADS, TILE = 3, 2, (4, 4)


def mixed_grid(signed: bool = True):
    """Probabilities in layers 0 and 2, a signed layer 1 (a linear kernel's weights) unless not `signed`:
    two colour scales (the probabilities stay above 0.01, so their log10 is their own)."""
    rng = np.random.default_rng(0)
    grid = blank_mosaic(N_LAYERS, N_HEADS, TILE)
    for layer in range(N_LAYERS):
        for head in range(N_HEADS):
            tile = rng.uniform(-3.0, 5.0, TILE) if layer == 1 and signed else rng.uniform(0.01, 1.0, TILE)
            grid.place(layer, head, tile.astype(np.float32))
    return grid


def counting(monkeypatch, name: str) -> list:
    """Calls of maps.<name> over the whole grid's image (the passes a redraw makes over every cell)."""
    calls, original = [], getattr(maps, name)

    def counted(image, *args, **kwargs):
        calls.append(image.shape)
        return original(image, *args, **kwargs)

    monkeypatch.setattr(maps, name, counted)
    return calls


@pytest.mark.parametrize("values, log, pass_name", [("weights", False, "weight_range"),
                                                    ("scores", False, "score_levels"),
                                                    ("weights", True, "log_scaled")])
def test_a_redraw_passes_over_the_whole_grid_once(qapp, monkeypatch, values, log, pass_name):
    grid = mixed_grid(signed=not log)
    calls = counting(monkeypatch, pass_name)
    view = pg.GraphicsLayoutWidget()
    legend = GridLegend(Heatmap(view.ci))
    scales = legend.show(grid, values, log)
    assert len(scales) == (2 if (values, log) == ("weights", False) else 1)
    assert calls.count(grid.image.shape) == 1, calls
    drawn = legend.heatmap.image.image
    finite = np.isfinite(grid.image)
    expected = np.log10(grid.image) if log else grid.image
    if len(scales) == 1:
        np.testing.assert_array_equal(drawn[finite], expected[finite])
    else:                                   # the signed layer 1 first, on the heat map's own image; then the rest
        top = grid.tile_origin(1, 0)[0]
        rows = slice(top, top + grid.tile_px[0])
        np.testing.assert_array_equal(drawn[rows][finite[rows]], grid.image[rows][finite[rows]])
        others = legend.images[0].image
        probabilities = finite.copy()
        probabilities[rows] = False
        np.testing.assert_array_equal(others[probabilities], grid.image[probabilities])


def test_the_legend_names_the_grids_layers_and_heads_at_their_tiles_centres(qapp):
    """One place names the grid's axes, for the panel and every export of the grid alike."""
    grid = mixed_grid()
    view = pg.GraphicsLayoutWidget()
    legend = GridLegend(Heatmap(view.ci, axes=("left", "top")))
    legend.show(grid, "weights", False)
    left, top = legend.heatmap.axes["left"], legend.heatmap.axes["top"]
    assert left._labels == ["L0", "L1", "L2"] and top._labels == ["H0", "H1"]
    rows, cols = grid.tile_px                   # a tile, then a one-pixel gutter: its centre is (side - 1) / 2 in
    np.testing.assert_allclose(left._positions, [i * (rows + 1) + (rows - 1) / 2 for i in range(N_LAYERS)])
    np.testing.assert_allclose(top._positions, [i * (cols + 1) + (cols - 1) / 2 for i in range(N_HEADS)])
