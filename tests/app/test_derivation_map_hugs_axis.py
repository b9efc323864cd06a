"""Show the work's map fills its axis (issue 22): at 1366 a 10x10 map of ~165 px sat mid-way in a ~165x370 px axis,
~100 px empty above and below it (the view's aspect locked to square cells, the view box as tall as its widget).

Expectation, from the ViewBox's geometry and the matrix's shape alone: the map's image, drawn with square cells, spans
its view box on both sides within a few px (the view box as large as the data, the room left given to the bars or
the text), in every room tried.
"""
from __future__ import annotations

import pytest

from tests.app.derivation_panel import derived_in_room
from tests.app.screen_fit import settle

SLACK_PX = 4


@pytest.mark.parametrize("size", [(420, 700), (700, 420), (600, 600)])     # rooms that have a map
def test_the_maps_view_box_hugs_the_square_map(qtbot, traced_llama, size):
    panel = derived_in_room(qtbot, traced_llama, size)
    settle(0.3)
    assert panel.view.isVisible(), f"{size}: the map was given up"
    box = panel.map.plot.getViewBox().sceneBoundingRect()
    image = panel.map.image.sceneBoundingRect().intersected(box)
    rows, columns = panel.map.shape
    assert abs(image.width() / columns - image.height() / rows) <= 1, "the map's cells are not square"
    assert box.width() - image.width() <= SLACK_PX and box.height() - image.height() <= SLACK_PX, \
        f"{size}: a {image.width():.0f}x{image.height():.0f} px map in a {box.width():.0f}x{box.height():.0f} px axis"
