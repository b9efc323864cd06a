"""View ▸ Reset Layout brings back the proportions the window was launched with, and a session does not wear
them down.

Seen at 1366x768 (drive 14, #8): launched, the left column 0-335 px, attention 340-960, Learn 970-1366; after the
translator (translate-en-zh) was opened and its tabs raised, the left column was 0-300 and Learn 1005-1366, and
so it stayed after switching back and after Reset Layout. The trigger was the translator's Q/K/V tab: its
controls, with the encoder / decoder / cross choice, asked 690 px in one row, more than attention's 620 px, and
Qt took the difference from both columns; Reset Layout then kept Learn at the width it had been squeezed to.
Expectation: the docks' rects at launch (a decoder opened, Learn open as on a first start, or not), recorded;
the same left and right edges after the translator's every panel and tab were raised and a decoder was opened
again; and after Reset Layout the same rects, within a few pixels, on emulated 1366x768 and 1920x1080 screens.
"""
from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from explorer.app.window.learn_placement import open_learn
from tests.app.journey import BUNDLED, journey_in_a_window
from tests.app.screen_fit import SCREENS, settle
from tests.app.stress_window import reset_layout

DOCKS = ("prompt", "tokens", "next_token", "attention")
NEAR_PX = 4
DECODER, TRANSLATOR = BUNDLED / "shakespeare-gqa", BUNDLED / "translate-en-zh"


def dock_rects(window) -> dict[str, tuple[int, int, int, int]]:
    """Left, top, right, bottom of each dock of DOCKS and of Learn where it is open."""
    docks = {name: window.docks[name] for name in DOCKS}
    learn = getattr(window, "learn_dock", None)
    if learn is not None and learn.isVisible():
        docks["learn"] = learn
    return {name: dock.geometry().getCoords() for name, dock in docks.items()}


def apart(now: dict, launch: dict, sides: tuple[int, ...]) -> dict:
    """The docks whose `sides` (indices into left, top, right, bottom) moved more than NEAR_PX since launch."""
    return {name: (launch[name], now.get(name)) for name in launch
            if now.get(name) is None or any(abs(now[name][i] - launch[name][i]) > NEAR_PX for i in sides)}


@pytest.mark.parametrize("learn", [True, False], ids=["learn open", "no learn"])
@pytest.mark.parametrize("screen_name", list(SCREENS))
def test_reset_layout_after_the_translators_tabs_gives_back_the_launch_rects(qtbot, tmp_path, monkeypatch,
                                                                            screen_name, learn):
    with journey_in_a_window(qtbot, tmp_path, monkeypatch, SCREENS[screen_name]) as journey:
        window = journey.window
        if learn:
            journey.act("Learn opened, as on a first start", lambda: open_learn(window))
        journey.open(DECODER, "When Mary and John went to the store, John gave a drink to")
        settle(0.5)
        launch = dock_rects(window)
        journey.open(TRANSLATOR, "The cat sat on the mat.")
        journey.raise_every_panel()
        journey.open(DECODER, "When Mary and John went to the store, John gave a drink to")
        journey.act("attention raised", lambda: journey.raise_panel("attention"))
        settle(0.5)
        moved = apart(dock_rects(window), launch, sides=(0, 2))
        assert not moved, f"columns moved during the session (launch, now): {moved}"
        journey.act("View ▸ Reset Layout", lambda: reset_layout(window))
        settle(0.5)
        moved = apart(dock_rects(window), launch, sides=(0, 1, 2, 3))
        assert not moved, f"Reset Layout did not give back the launch rects (launch, now): {moved}"


@pytest.mark.parametrize("screen_name", list(SCREENS))
def test_reset_layout_gives_learn_its_launch_width_after_the_column_was_squeezed(qtbot, tmp_path, monkeypatch,
                                                                               screen_name):
    """Learn's column narrowed (as a separator drag, or a wide panel, does): Reset Layout gives every dock its
    launch rect again; it kept the column at the width it had been squeezed to, and the left column took the
    rest."""
    with journey_in_a_window(qtbot, tmp_path, monkeypatch, SCREENS[screen_name]) as journey:
        window = journey.window
        journey.act("Learn opened, as on a first start", lambda: open_learn(window))
        journey.open(DECODER, "When Mary and John went to the store, John gave a drink to")
        settle(0.5)
        launch = dock_rects(window)
        docks = [window.docks["tokens"], window.docks["attention"], window.learn_dock]
        widths = [dock.width() for dock in docks]
        squeezed = [widths[0] - 40, widths[1] + 100, widths[2] - 60]
        journey.act("Learn's column narrowed", lambda: window.resizeDocks(docks, squeezed, Qt.Orientation.Horizontal))
        assert window.learn_dock.width() < widths[2] - 30, "the column was not narrowed"
        journey.act("View ▸ Reset Layout", lambda: reset_layout(window))
        settle(0.5)
        moved = apart(dock_rects(window), launch, sides=(0, 1, 2, 3))
        assert not moved, f"Reset Layout did not give back the launch rects (launch, now): {moved}"
