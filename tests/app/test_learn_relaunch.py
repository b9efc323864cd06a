"""A relaunch opens the Learn dock again when it was open at the last quit, where it was and at the stop it
showed; closed at the quit, it stays closed. Qt's restoreState places only the docks a window has, and the
Learn dock was made only when first opened, so the layout saved with it came back without it.

Expectation: the dock's area, rectangle and stop before the quit, read back after the relaunch (two windows
on one settings file in the test's folder, as test_geometry_relaunch does).
"""
from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from explorer.app.window.learn_placement import open_learn
from tests.app.screen_fit import settle
from tests.app.test_geometry_relaunch import launched

pytestmark = pytest.mark.usefixtures("store_home")  # the store in the test's folder
STOP = 2


def where(window) -> tuple:
    dock = window.learn_dock
    return window.dockWidgetArea(dock), dock.isFloating(), dock.geometry().getRect()


def test_learn_open_at_quit_is_open_again_where_it_was(qtbot, tmp_path, screen):
    first = launched(qtbot, tmp_path)
    open_learn(first).go_to(STOP)
    settle(0.5)
    before = where(first)
    assert before[0] == Qt.DockWidgetArea.RightDockWidgetArea and not first.learn_dock.visibleRegion().isEmpty()
    first.close()
    settle(0.2)
    again = launched(qtbot, tmp_path)
    try:
        dock = getattr(again, "learn_dock", None)
        assert dock is not None and dock.isVisible() and not dock.visibleRegion().isEmpty(), \
            "Learn, open at the quit, is not open after the relaunch"
        assert where(again) == before, f"Learn came back at {where(again)}, was at {before}"
        assert dock.widget().index == STOP
    finally:
        again.close()


def test_learn_closed_before_the_quit_stays_closed(qtbot, tmp_path, screen):
    first = launched(qtbot, tmp_path)
    open_learn(first)
    settle(0.3)
    first.learn_dock.close()
    settle(0.2)
    first.close()
    settle(0.2)
    again = launched(qtbot, tmp_path)
    try:
        dock = getattr(again, "learn_dock", None)
        assert dock is None or not dock.isVisible()
    finally:
        again.close()
