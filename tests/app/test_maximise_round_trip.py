"""View ▸ Maximise the Panel in Focus (Ctrl+Shift+M) gives the focused panel the whole window, every other dock
hidden, and pressed again gives every dock back where it was (issue 22 #13: "No panel can be maximised").

Expectation: the panel's dock fills the window under its bars while maximised, and every dock's geometry (its
rect in the window, shown or not, floating or not) after the round trip is the one before, on emulated 1366x768
and 1920x1080 screens, for attention and for a panel of the bottom tabs (Embeddings, focused by a click)."""
from __future__ import annotations

import pytest
from PySide6.QtGui import QKeySequence

from tests.app.layout_steps import opened_window, then
from tests.app.screen_fit import assert_fits

pytestmark = pytest.mark.usefixtures("store_home")  # the store in the test's folder


def geometries(window) -> dict:
    """Every dock's rect, visibility and floating, by name."""
    return {name: (dock.geometry().getRect(), dock.isVisible(), dock.isFloating())
            for name, dock in window.docks.items()}


def maximise_action(window):
    return next(action for action in window.menus.view.actions()
                if action.shortcut() == QKeySequence("Ctrl+Shift+M"))


@pytest.mark.parametrize("panel", ["attention", "embeddings"])
def test_maximise_and_again_gives_every_dock_back_its_geometry(qtbot, tmp_path, screen, panel):
    with opened_window(qtbot, tmp_path) as window:
        dock = window.docks[panel]
        then(window, lambda w: (dock.raise_(), dock.widget().setFocus()))
        before = geometries(window)
        assert before[panel][1], f"{panel} is not shown"
        action = maximise_action(window)
        then(window, lambda w: action.trigger())
        shown = [name for name, other in window.docks.items() if other.isVisible()]
        assert shown == [panel], f"maximised {panel}, shown: {shown}"
        bars = window.menuBar().height() + window.statusBar().height()
        assert dock.width() >= window.width() - 12 and dock.height() >= window.height() - bars - 200, \
            f"{panel} maximised is {dock.width()} x {dock.height()} in a {window.width()} x {window.height()} window"
        assert_fits(window, screen, f"{panel} maximised")
        then(window, lambda w: action.trigger())
        after = geometries(window)
        moved = {name: (before[name], after[name]) for name in before if after[name] != before[name]}
        assert not moved, f"maximised and restored, docks moved (before, after): {moved}"
