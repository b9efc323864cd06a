"""A window saved on a 1366x768 screen, relaunched on a 1920x1080 one and grown to fill it gives the growth to
attention, not to the left column.

Seen on a bare X screen: the window came back at its saved 1366 x 768 (it now fills the larger screen where it
filled the smaller one), and grown to 1920 x 1080 the left column
(Tokens over Next token) took the extra width, about 885 px, and left the attention map a strip about 200 px wide.
A grow that the layout's give-back does not cover (it gives back only near the size the layout was taken at)
has the left column keep the default rule's width: a quarter of the window's, within 330 to 520 px.

Expectation, measured as geometry: the left column's width within [330, 520] px (the default layout's bounds) and
attention wider than the left column after the grow.
"""
from __future__ import annotations

import pytest
from PySide6.QtCore import QSize, Qt

from tests.app.layout_probe import in_sight
from tests.app.screen_fit import emulated_screen, settle
from tests.app.test_geometry_relaunch import launched

pytestmark = pytest.mark.usefixtures("store_home")  # the store in the test's folder

SMALL, LARGE = QSize(1366, 768), QSize(1920, 1080)
LEFT_BOUNDS = (330, 520)             # the default layout's left column, in px (the expectation)
SLACK_PX = 8


def widths(window) -> dict[str, int]:
    settle(0.3)
    window.layout().activate()
    return {name: dock.width() for name, dock in window.docks.items() if in_sight(dock)}


@pytest.mark.parametrize("filled", [True, False], ids=["filled-the-small-screen", "made-smaller-by-hand"])
def test_a_grow_on_a_larger_screen_goes_to_attention(qtbot, tmp_path, filled):
    """A window that filled the small screen fills the large one at the relaunch (test_relaunch_keeps_height); one a
    person made smaller comes back at its size and is grown by hand. Either way attention takes the growth."""
    with emulated_screen(SMALL):
        first = launched(qtbot, tmp_path)
        if not filled:
            first.resize(SMALL - QSize(66, 28))
            settle(0.2)
        saved = first.frameGeometry().size()
        first.close()
        settle(0.2)
    with emulated_screen(LARGE):
        again = launched(qtbot, tmp_path)
        try:
            assert again.frameGeometry().size() == (LARGE if filled else saved)
            again.resize(LARGE)
            settle(0.5)
            seen = widths(again)
            left = seen["tokens"]
            assert LEFT_BOUNDS[0] - SLACK_PX <= left <= LEFT_BOUNDS[1] + SLACK_PX, f"left column {left} px: {seen}"
            assert seen["attention"] > left, f"attention {seen['attention']} px, left column {left} px"
        finally:
            again.close()


def test_a_dragged_left_column_keeps_its_width_through_a_grow(qtbot, tmp_path):
    """A person's drag of the left column wider than the rule gives (take(dragged=True), as a mouse release on the
    window's separator does) is not undone by a later grow."""
    with emulated_screen(SMALL):
        first = launched(qtbot, tmp_path)
        first.close()
        settle(0.2)
    with emulated_screen(LARGE):
        again = launched(qtbot, tmp_path)
        try:
            tokens, attention = again.docks["tokens"], again.docks["attention"]
            dragged = LEFT_BOUNDS[1] + 100                  # wider than the rule ever gives
            again.resizeDocks([tokens, attention], [dragged, tokens.width() + attention.width() - dragged],
                              Qt.Orientation.Horizontal)
            settle(0.2)
            assert abs(tokens.width() - dragged) <= SLACK_PX
            again.dock_shares.take(dragged=True)
            again.resize(LARGE)
            settle(0.5)
            seen = widths(again)
            assert seen["tokens"] >= dragged - SLACK_PX, f"dragged to {dragged} px, {seen['tokens']} after the grow"
            assert seen["attention"] > seen["tokens"], seen
        finally:
            again.close()
