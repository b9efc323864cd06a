"""A window shrunk to 800 x 600 asks no more than the screen, and grown back to the screen fits it again.

Seen on a bare X screen at 1366x768 with the translator open: shrunk to 800 x 600, the window could be no less
than 1007 x 866 (the Tokens column's wrapped notes over Next token, the toolbars in two rows); grown back to
1366 x 738 it stayed 866 px tall, its status bar and bottom tabs below the screen's edge. A wrapped text in a
column squeezed that narrow now asks no more height than it needs at a readable width, the rest in its tooltip.
"""
from __future__ import annotations

import pytest
from PySide6.QtCore import QSize

from tests.app.journey import BUNDLED, journey_in_a_window
from tests.app.screen_fit import fit_problems

pytestmark = pytest.mark.usefixtures("store_home")  # the store in the test's folder

SCREEN = QSize(1366, 768)


def test_shrunk_and_regrown_the_translators_window_fits_the_screen(qtbot, tmp_path, monkeypatch):
    with journey_in_a_window(qtbot, tmp_path, monkeypatch, SCREEN) as journey:
        window = journey.window
        journey.open(BUNDLED / "translate-en-zh", "To be, or not to be the again")
        journey.raise_panel("attention")
        window.resize(800, 600)                          # taller than the screen at that width: its own finding
        journey.idle("shrunk to 800 x 600")
        least = window.minimumSizeHint()
        assert least.height() <= SCREEN.height() and window.height() <= SCREEN.height(), \
            f"shrunk, the window is {window.width()}x{window.height()}, at least {least.width()}x{least.height()}"
        journey.act("grown back", lambda: window.resize(1366, 738))
        assert window.height() <= SCREEN.height(), f"grown back, the window is {window.width()}x{window.height()}"
        assert not fit_problems(window, SCREEN), fit_problems(window, SCREEN)
