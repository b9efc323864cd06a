"""View ▸ Reset Layout leaves a window that fits the screen whatever was on it before: a second Reset
Layout right after the first, and a Reset Layout with Help ▸ Learn open (its dock is not a panel's), on
emulated 1366x768 and 1920x1080 screens with no window manager (tests/app/screen_fit.py)."""
from __future__ import annotations

import pytest
from PySide6.QtCore import QEvent, QObject

from tests.app.layout_steps import learn, opened_window, reset_layout, then
from tests.app.screen_fit import assert_fits, settle
from tests.app.stress_window import registered_panels

pytestmark = pytest.mark.usefixtures("store_home")  # the store in the test's folder


class WindowSizes(QObject):
    """Every size the window is given (on a bare X screen each one is a real resize a person sees)."""

    def __init__(self, window) -> None:
        super().__init__(window)
        self.heights: list[int] = []
        window.installEventFilter(self)

    def eventFilter(self, watched, event) -> bool:
        if event.type() == QEvent.Type.Resize:
            self.heights.append(event.size().height())
        return False


def test_reset_layout_twice_never_makes_the_window_taller_than_the_screen(qtbot, tmp_path, screen):
    with opened_window(qtbot, tmp_path) as window:
        for name in registered_panels():         # every tab built: each has a minimum height of its own
            window.docks[name].show()
            window.docks[name].raise_()
            settle(0.05)
        settle(0.3)
        sizes = WindowSizes(window)
        for time in ("a first", "a second"):
            then(window, reset_layout)
            assert_fits(window, screen, f"after {time} Reset Layout", plots=False)
        tallest = max(sizes.heights, default=window.height())
        assert tallest <= screen.height(), \
            f"Reset Layout made the window {tallest} px tall on the way, on a {screen.height()} px screen"


def test_reset_layout_with_learn_open_fits_the_screen_and_keeps_learn_beside_the_panels(qtbot, tmp_path, screen):
    with opened_window(qtbot, tmp_path) as window:
        then(window, learn)
        assert_fits(window, screen, "Learn opened", plots=False)
        width = window.learn_dock.width()
        then(window, reset_layout)
        assert_fits(window, screen, "Learn open, layout reset", plots=False)
        assert window.learn_dock.isVisible() and not window.learn_dock.isFloating()
        assert window.dockWidgetArea(window.learn_dock).name == "RightDockWidgetArea"
        attention, learn_dock = window.docks["attention"], window.learn_dock
        assert learn_dock.geometry().left() >= attention.geometry().right(), "Learn is not beside the panels"
        assert abs(learn_dock.width() - width) <= 0.03 * width, \
            f"Learn went from {width} to {learn_dock.width()} px wide"
        assert learn_dock.height() >= attention.height(), "Learn is shorter than the panels beside it"
