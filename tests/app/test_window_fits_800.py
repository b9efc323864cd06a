"""The main window fits an 800 x 600 screen: after launch, with a model open, and after View ▸ Reset Layout.

Its least width was 864-872 px once a model was open: the status bar asked the whole text of each of its seven
fields as its least width (now elided below its room), and at 796 px the toolbars took three rows, 31 px of
height a 600 px screen does not have (now two at most on a short screen, the rest behind a toolbar's »).

Expectation: the emulated screen's size (tests/app/screen_fit.py), and toolbar rows counted by hand.
"""
from __future__ import annotations

import pytest
from PySide6.QtCore import QSize

from explorer.app.window import dock_layout
from tests.app.journey import BUNDLED
from tests.app.screen_fit import emulated_screen, fit_problems, settle
from tests.app.test_layout_shrink_plots import reset_layout
from tests.app.window_helpers import new_window, opened

pytestmark = pytest.mark.usefixtures("store_home")  # the store in the test's folder
SMALL = QSize(800, 600)


def test_the_window_fits_an_800_by_600_screen(qtbot, tmp_path):
    with emulated_screen(SMALL):
        window = new_window(qtbot, tmp_path)
        try:
            settle(0.5)
            assert not fit_problems(window, SMALL, plots=False), fit_problems(window, SMALL, plots=False)
            opened(qtbot, window, BUNDLED / "shakespeare-gqa")
            settle(0.5)
            hint = window.minimumSizeHint()
            assert hint.width() <= SMALL.width() and hint.height() <= SMALL.height(), \
                f"with a model open the window asks at least {hint.width()}x{hint.height()}"
            assert not fit_problems(window, SMALL, plots=False), fit_problems(window, SMALL, plots=False)
            reset_layout(window)
            settle(0.5)
            assert not fit_problems(window, SMALL, plots=False), \
                "after Reset Layout: " + "; ".join(fit_problems(window, SMALL, plots=False))
        finally:
            window.close()


def test_toolbar_rows_at_most_two_fold_the_least():
    widths = [438, 382, 512]
    assert dock_layout.toolbar_rows(widths, 796) == [0, 1, 2]                 # 438+382 > 796: a row each
    assert dock_layout.toolbar_rows(widths, 796, most=2) == [0, 2]            # 820 folds 24 px, 894 would fold 98
    assert dock_layout.toolbar_rows(widths, 1362, most=2) == [0]              # 1332 fits one row
    assert dock_layout.toolbar_rows(widths, 900, most=3) == [0, 2]            # within `most`: as before
