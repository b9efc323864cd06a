"""Show the work's square map fills its axis rather than sit mid-way in a part as tall as the panel (issue 22,
drive20 m4: at 1366 a 10x10 map of ~165 px in a ~165x370 px axis, ~100 px empty above and below it). In a row of
map, q·k bars and text the row's width held the map back; the bars now go under the map where that keeps most of
its size (it is then 10% smaller here), and take the height the map left empty.

Expectation, from the drawn geometry alone: the map's image spans its ViewBox within a few px each way, its cells
square, and the q·k bars, shown, keep a view of at least MIN_PLOT_PX each way; in rooms where the row of three
left the map's axis ~185 px taller than the map (a 248 px map in a 249 x 433 px axis at 700 x 540)."""
from __future__ import annotations

import pytest

from tests.app.derivation_panel import derived_in_room
from tests.app.screen_fit import MIN_PLOT_PX, settle

SLACK_PX = 4


def on_view(view, item) -> tuple[float, float]:
    """An item's size in its view's pixels."""
    rect = view.mapFromScene(item.sceneBoundingRect()).boundingRect()
    return rect.width(), rect.height()


@pytest.mark.parametrize("size", [(700, 540), (820, 660), (980, 780)])
def test_the_maps_square_fills_its_view_box_and_the_bars_take_the_rest(qtbot, traced_llama, size):
    panel = derived_in_room(qtbot, traced_llama, size)
    settle(0.3)
    assert panel.view.isVisible() and panel.products_view.isVisible(), f"{size}: a plot is given up"
    box = panel.map.plot.getViewBox()
    image = panel.map.image.sceneBoundingRect().intersected(box.sceneBoundingRect())
    rows, columns = panel.map.shape
    assert abs(image.width() / columns - image.height() / rows) <= 1, "the map's cells are not square"
    box_w, box_h = on_view(panel.view, box)
    image_w, image_h = panel.view.mapFromScene(image).boundingRect().size().toTuple()
    assert box_w - image_w <= SLACK_PX and box_h - image_h <= SLACK_PX, \
        f"{size}: a {image_w}x{image_h} px map in a {box_w:.0f}x{box_h:.0f} px axis"
    bars = on_view(panel.products_view, panel.products.getViewBox())
    assert min(bars) >= MIN_PLOT_PX, f"{size}: the q·k bars' view is {bars[0]:.0f}x{bars[1]:.0f} px"
