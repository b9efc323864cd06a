"""Help ▸ Learn's column takes the whole height of the window's right side, from under the prompt down to the
status bar, at 1366x768 and at 1920x1080: at 1920x1080 the panels' bottom tabs ran under it, across the whole
width, and left it the top row alone (about 330 px of 1080). Opened on the default layout and again after
View ▸ Reset Layout with it open; every plot still at least 120 px each way, and the window within the screen.

The expectation is the left column's own extent (tokens over the next-token candidates, which runs from under
the prompt to the status bar) and the status bar's top, never a size copied from the layout.
"""
from __future__ import annotations

import pytest
from PySide6.QtCore import QPoint

from tests.app.layout_steps import learn, opened_window, reset_layout, then
from tests.app.screen_fit import assert_fits

pytestmark = pytest.mark.usefixtures("store_home")  # the store in the test's folder

NEAR_PX = 12          # a separator and a title bar's pixels


def extent(window, widget) -> tuple[int, int]:
    """The widget's top and bottom, in the window's coordinates."""
    top = widget.mapTo(window, QPoint(0, 0)).y()
    return top, top + widget.height()


def column_problems(window) -> list[str]:
    learn_top, learn_bottom = extent(window, window.learn_dock)
    left_top = min(extent(window, window.docks[name])[0] for name in ("tokens", "next_token"))
    left_bottom = max(extent(window, window.docks[name])[1] for name in ("tokens", "next_token"))
    status_top = extent(window, window.statusBar())[0]
    problems = []
    if learn_top > left_top + NEAR_PX:
        problems.append(f"the Learn column starts at {learn_top} px, the left column at {left_top} px")
    if learn_bottom < min(left_bottom, status_top) - NEAR_PX:
        problems.append(f"the Learn column ends at {learn_bottom} px, the left column at {left_bottom} px, "
                        f"the status bar starts at {status_top} px")
    return problems


def test_the_learn_column_takes_the_right_sides_whole_height(qtbot, tmp_path, screen):
    with opened_window(qtbot, tmp_path) as window:
        then(window, learn)
        assert not column_problems(window), column_problems(window)
        assert_fits(window, screen, "Learn opened")
        then(window, reset_layout)
        assert window.learn_dock.isVisible()
        assert not column_problems(window), column_problems(window)
        assert_fits(window, screen, "Learn open, layout reset")
