"""Help ▸ Learn opened again after the Learn dock was closed and the layout reset still fits the screen.

A closed dock keeps its slot; View ▸ Reset Layout, which arranges the panels, left that slot under the
panels' tabs, so Learn opened again there stacked on them and the window asked for more height than a
1366x768 screen has (696x912).
"""
from __future__ import annotations

import pytest

from tests.app.layout_steps import learn, opened_window, reset_layout, then
from tests.app.screen_fit import assert_fits

pytestmark = pytest.mark.usefixtures("store_home")  # the store in the test's folder


def test_learn_opened_again_after_a_reset_layout_fits_the_screen(qtbot, tmp_path, screen):
    with opened_window(qtbot, tmp_path) as window:
        then(window, learn)
        assert_fits(window, screen, "Learn opened", plots=False)
        window.learn_dock.close()
        then(window, reset_layout)
        assert_fits(window, screen, "Learn closed, layout reset", plots=False)
        then(window, learn)
        assert window.learn_dock.isVisible()
        assert window.dockWidgetArea(window.learn_dock).name == "RightDockWidgetArea"
        assert_fits(window, screen, "Learn opened again", plots=False)
