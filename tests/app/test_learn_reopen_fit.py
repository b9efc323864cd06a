"""Help ▸ Learn opened again after the Learn dock was closed and the layout reset still fits the screen.

A closed dock keeps its slot; View ▸ Reset Layout, which arranges the panels, left that slot under the
panels' tabs, so Learn opened again there stacked on them and the window asked for more height than a
1366x768 screen has (696x912).
"""
from __future__ import annotations

from tests.app.screen_fit import assert_fits, settle
from tests.app.stress_window import learn, reset_layout
from tests.app.test_window import new_window, store_home  # noqa: F401


def test_learn_opened_again_after_a_reset_layout_fits_the_screen(qtbot, tmp_path, screen):
    window = new_window(qtbot, tmp_path)
    try:
        settle(0.3)
        learn(window)
        settle(0.5)
        assert_fits(window, screen, "Learn opened", plots=False)
        window.learn_dock.close()
        reset_layout(window)
        settle(0.5)
        assert_fits(window, screen, "Learn closed, layout reset", plots=False)
        learn(window)
        settle(0.5)
        assert window.learn_dock.isVisible()
        assert window.dockWidgetArea(window.learn_dock).name == "RightDockWidgetArea"
        assert_fits(window, screen, "Learn opened again", plots=False)
    finally:
        window.close()
