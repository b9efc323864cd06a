"""Shrunk and grown back to nearly the size it had, the window gives its docks back their shares.

Seen on a bare X screen at 1920x1080 with the translator open: the window shrunk to 800 x 600 and grown back to
1920 x 1050 (a person's drag rarely lands on the very pixel) kept Qt's own spread of the regrow: the Source
editor 400 px tall, the attention map 14 px and 4 px high. The layout was given back only at the exact size
it was taken at.
"""
from __future__ import annotations

import pytest
from PySide6.QtCore import QSize

from tests.app.journey import BUNDLED, journey_in_a_window

pytestmark = pytest.mark.usefixtures("store_home")  # the store in the test's folder

SCREEN = QSize(1920, 1080)


def test_docks_get_their_shares_back_after_a_shrink_and_a_regrow_near_the_size_before(qtbot, tmp_path,
                                                                                         monkeypatch):
    with journey_in_a_window(qtbot, tmp_path, monkeypatch, SCREEN) as journey:
        window = journey.window
        journey.open(BUNDLED / "translate-en-zh", "To be, or not to be the again")
        journey.raise_panel("attention")
        before = {name: dock.size() for name, dock in window.docks.items() if dock.isVisible()}
        laid_out = window.size()
        window.resize(800, 600)
        journey.idle("shrunk to 800 x 600")
        journey.act("grown back 30 px short", lambda: window.resize(laid_out.width(), laid_out.height() - 30))
        for name in ("prompt", "attention"):
            now, then = window.docks[name].size(), before[name]
            assert abs(now.height() - then.height()) <= 40, f"{name} is {now.height()} px tall, {then.height()} before"
