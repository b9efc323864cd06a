"""A tiny attention map's grid shows every head of a layer where they fit (drive20 m5): the translator at step 0
(its decoder's 1×1 self-attention map) drew each tile ~128 px wide at 1366×768, so only H0 was in sight and the
other heads needed scrolling. Expectation: the grid's scroll viewport and the layer's head count. A one-cell
tile is readable once it is as wide as its head's label ("H3", QFontMetrics of the grid's font); a grid of
`heads` such tiles with one-pixel gutters of its image between them fits the viewport's width, so
no horizontal scroll is needed, every head's tile lies within the viewport, and each is as wide as its label.
"""
from __future__ import annotations

import pytest
from PySide6.QtCore import QPointF
from PySide6.QtGui import QFontMetrics

from tests.app.journey import BUNDLED, journey_in_a_window
from tests.app.screen_fit import SCREENS

pytestmark = pytest.mark.usefixtures("store_home")  # the store in the test's folder


def head_edges(panel) -> list[tuple[float, float]]:
    """Each head's tile of layer 0, its left and right in the scroll viewport's px."""
    rows, columns = panel.mosaic.tile_px
    box, view = panel.grid.plot.getViewBox(), panel.grid_view
    viewport = panel.grid_scroll.viewport()
    edges = []
    for head in range(panel.mosaic.n_heads):
        top, left = panel.mosaic.tile_origin(0, head)
        ends = [view.viewport().mapTo(viewport, view.mapFromScene(box.mapViewToScene(QPointF(x, top)))).x()
                for x in (left - 0.5, left + columns - 0.5)]     # the image's pixel i is centred on i
        edges.append((ends[0], ends[1]))
    return edges


@pytest.mark.parametrize("screen_name", ["1366x768"])
def test_the_translators_step_0_grid_shows_every_head_that_fits(qtbot, tmp_path, monkeypatch, screen_name):
    with journey_in_a_window(qtbot, tmp_path, monkeypatch, SCREENS[screen_name]) as journey:
        journey.open(BUNDLED / "translate-en-zh", "The cat sat on the mat.")
        window = journey.window
        journey.act("step 0 selected", lambda: window.session.select(step=0))
        panel = journey.raise_panel("attention")
        journey.idle("drawing attention")
        journey.act("attention drawn", lambda: None)
        assert panel.mosaic.tile_shape[1] <= 2, f"not a tiny map: {panel.mosaic.tile_shape}"
        heads, pixels = panel.mosaic.n_heads, panel.mosaic.tile_px[1]
        scroll = panel.grid_scroll
        label_px = QFontMetrics(panel.grid_view.font()).horizontalAdvance(f"H{heads - 1}")
        axis_px = 2 * QFontMetrics(panel.grid_view.font()).horizontalAdvance("L10")   # the layers' axis, generously
        least_grid = heads * label_px + (heads - 1) * label_px / pixels     # gutters: a pixel of a tile each
        edges = head_edges(panel)
        sight = scroll.viewport().width()
        assert least_grid + axis_px <= sight, f"{heads} heads of {label_px} px do not fit {sight} px"
        assert scroll.horizontalScrollBar().maximum() == 0, "the heads of a layer need a horizontal scroll"
        assert all(left >= -1 and right <= sight + 1 for left, right in edges), \
            f"a head's tile is out of the {sight} px viewport: {edges}"
        assert min(right - left for left, right in edges) >= label_px, edges
