"""The window's size does not depend on the model opened before: switching models leaves it the size it
was given.

On a bare X screen (no window manager) a window that Qt grows to its layout's minimum never shrinks back,
because nothing but the app ever resizes it. Opening the translator after another model raised the docks'
minimum heights for a moment (the Tokens panel's source and target lines, the next-token panel's
working state), and the window grew from 736 to 758 px over a round of switches and kept that height.
"""
from __future__ import annotations

import pytest
from PySide6.QtCore import QSize

from tests.app.journey import BUNDLED, journey_in_a_window

pytestmark = pytest.mark.usefixtures("store_home")  # the store in the test's folder

SCREEN = QSize(1366, 768)
GIVEN = QSize(1366, 736)        # what a first start on a bare 1366x768 X screen gave the window
SWITCHES = [("shakespeare-gqa", "To be, or not to be"), ("translate-en-zh", "The quick brown fox"),
            ("shakespeare-mla", "To be, or not to be"), ("translate-en-zh", "The quick brown fox jumps"),
            ("shakespeare-gqa", "To be, or not to be")]


def test_model_switches_leave_the_window_the_size_it_was_given(qtbot, tmp_path, monkeypatch):
    with journey_in_a_window(qtbot, tmp_path, monkeypatch, SCREEN) as journey:
        window = journey.window
        journey.open(BUNDLED / SWITCHES[0][0], SWITCHES[0][1])
        journey.raise_every_panel()
        given = GIVEN - (window.frameGeometry().size() - window.size())      # the frame within the screen
        window.resize(given)
        qtbot.waitUntil(lambda: window.size() == given, timeout=5000)
        sizes = []
        for name, prompt in SWITCHES[1:]:
            journey.open(BUNDLED / name, prompt)
            journey.raise_every_panel()
            journey.idle(f"after {name}")
            at_rest = window.minimumSizeHint()
            assert at_rest.height() <= given.height(), f"{name} asks {at_rest.height()} px at rest"
            sizes.append((name, window.size().toTuple()))
        assert all(size == given.toTuple() for _, size in sizes), \
            f"the window was given {given.toTuple()}; after each switch it was {sizes}"
