"""At the window's least size, Show the work's plots keep legible views or give way, and its text keeps room.

Drive 14 (#7): shrunk to its minimum on a 1366x768 screen, Show the work's map was ~45 px tall and its q·k bar
chart ~60 px. Expectation: the real window on an emulated 1366x768 and 1920x1080 screen, shrunk to its least
size and to its least width at the screen's height; after a cell of the attention map is clicked (Show the work
comes to the front and derives it), every plot a person can see is at least MIN_PLOT_PX each way (Journey.act
checks tests/app/screen_fit.py's fit_problems after every action), the map is still there to click, and the
derivation's text keeps at least 80 px across; grown back to the screen, both plots are shown again.
"""
from __future__ import annotations

import pytest
from PySide6.QtCore import QSize

from tests.app.journey import BUNDLED, journey_in_a_window
from tests.app.layout_probe import in_sight
from tests.app.screen_fit import SCREENS

pytestmark = pytest.mark.usefixtures("store_home")  # the store in the test's folder

PROMPT = "When Mary and John went to the store, John gave a drink to"


@pytest.mark.parametrize("screen_name", list(SCREENS))
def test_show_the_work_at_the_windows_least_size(qtbot, tmp_path, monkeypatch, screen_name):
    screen = SCREENS[screen_name]
    with journey_in_a_window(qtbot, tmp_path, monkeypatch, screen) as journey:
        window = journey.window
        journey.open(BUNDLED / "shakespeare-gqa", PROMPT)
        least = window.minimumSizeHint()
        for size in (least, QSize(least.width(), screen.height())):
            journey.act(f"shrunk to {size.width()}x{size.height()}", lambda size=size: window.resize(size))
            journey.derive_a_cell()                   # checks every visible plot after the click
            panel = window.docks["derivation"].widget()
            assert in_sight(panel.view), "Show the work gave up its map, the plot a person clicks"
            assert panel.text.width() >= 80, f"the derivation's text is {panel.text.width()} px wide"
            journey.act("derive the block", lambda: panel.what_box.setCurrentIndex(1))
            journey.act("derive the cell", lambda: panel.what_box.setCurrentIndex(0))
        journey.act("grown back", lambda: window.resize(screen))
        journey.derive_a_cell()
        panel = window.docks["derivation"].widget()
        assert in_sight(panel.view) and in_sight(panel.products_view), "grown back, a plot stayed given up"
