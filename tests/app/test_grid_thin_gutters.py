"""The all-heads grid's gutters stay thin beside tiles of a token or two (issue 22, session 25's export): the
translator's cross-attention grid at the prefill has 1-row tiles (one target token over the source). A tile is
drawn square, and its one-cell gutter made each gap between layers as tall as a tile: half the grid was gutter.

Expectations: the ViewBox's own mapping of the grid's image to screen px (a gap between two layers' tiles is a
separator, at most a quarter of a tile's height), and each tile's values are the head's map (views.maps, itself
checked against transformers), whatever the pixels each cell takes.
"""
from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import QPointF

from explorer.views.maps import attention_matrix
from tests.app.journey import BUNDLED, journey_in_a_window
from tests.app.screen_fit import SCREENS

pytestmark = pytest.mark.usefixtures("store_home")  # the store in the test's folder


def rows_on_screen(panel, top: float, bottom: float) -> float:
    """The screen px between two image rows' edges of the grid (pixel i is centred on i)."""
    box = panel.grid.plot.getViewBox()
    return box.mapViewToDevice(QPointF(0, bottom - 0.5)).y() - box.mapViewToDevice(QPointF(0, top - 0.5)).y()


@pytest.mark.parametrize("screen_name", ["1366x768"])
def test_the_translators_prefill_cross_grid_has_thin_gutters(qtbot, tmp_path, monkeypatch, screen_name):
    with journey_in_a_window(qtbot, tmp_path, monkeypatch, SCREENS[screen_name]) as journey:
        journey.open(BUNDLED / "translate-en-zh", "The cat sat on the mat.")
        window = journey.window
        journey.act("the prefill's cross-attention", lambda: window.session.select(step=0, attention="cross"))
        panel = journey.raise_panel("attention")
        journey.idle("drawing attention")
        journey.act("attention drawn", lambda: None)
        mosaic, trace = panel.mosaic, window.session.trace
        assert panel.view.kind == "cross" and mosaic.tile_shape[0] == 1, f"not 1-row tiles: {mosaic.tile_shape}"
        for layer in range(mosaic.n_layers):
            for head in range(mosaic.n_heads):
                np.testing.assert_array_equal(mosaic.tile(layer, head),
                                              attention_matrix(trace, layer, head, 0, cross=True))
        rows = mosaic.tile_px[0]
        below = next(l for l in range(mosaic.n_layers) if mosaic.tile_origin(l, 0)[0] > 0)
        top, next_top = mosaic.tile_origin(0, 0)[0], mosaic.tile_origin(below, 0)[0]
        tile, gap = rows_on_screen(panel, top, top + rows), rows_on_screen(panel, top + rows, next_top)
        assert tile > 0 and gap <= tile / 4, f"a gutter {gap:.1f} px under a tile {tile:.1f} px tall"
