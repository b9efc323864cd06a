"""A tab raised holds the attention grid until the window has laid it out and painted it: raised again at 8,000
tokens while the grid filled, the KV cache's relayout and paint took 40-50 ms of the GUI thread's CPU but froze the
window 94-179 ms, the GUI thread waiting on the grid's threads for Python's lock. The grid (GridFiller.held) waits
from the raise, both for a tab raised again (its panel built, nothing to draw) and a first raise, and no longer once
the raise's turns have run. It waits from the raise's first event, before the panel is laid out: a tab raised again
after a wider tab had widened the tabs' area (the KV lab at its first raise) was laid out at its new width inside the
raise, before the dock said it was visible."""
from __future__ import annotations

import time

import pytest
from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtWidgets import QLabel, QMainWindow, QWidget

from explorer.app.widgets.grid_filler import GridFiller
from explorer.app.window.panel_dock import PanelDock
from tests.app.held_grid import HeldAt, settle


def front_width(window: QMainWindow) -> int:
    return window.findChild(PanelDock, "front").widget().width()


def wide_panel(window: QMainWindow) -> QWidget:
    """A panel wider than the tabs' area it joins: its first raise widens the area."""
    panel = QLabel("behind, built at its first raise, wider than the area")
    panel.setMinimumWidth(front_width(window) + 150)
    return panel


@pytest.fixture
def tabbed(qtbot):
    """Two docks tabbed together in a window, the first in front, and a grid beside them."""
    window = QMainWindow()
    qtbot.addWidget(window)
    window.setCentralWidget(QLabel("centre"))
    front = PanelDock("front", window)
    front.setWidget(QLabel("front"))
    behind = PanelDock("behind", window, build=lambda: wide_panel(window))
    for dock in (front, behind):
        dock.setObjectName(dock.windowTitle())
        window.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, dock)
    window.tabifyDockWidget(front, behind)
    window.resize(600, 400)
    window.show()
    front.raise_()
    settle()
    grid = GridFiller(QObject(window))
    # The first raise's turns come later on a loaded machine (CI's full run once found the grid still held here);
    # an earlier test's model thread may end a person's request meanwhile (thread.person_request)
    deadline = time.monotonic() + 10.0
    while grid.held() and time.monotonic() < deadline:
        settle(0.05)
    assert not grid.held(), "nothing raised yet, the grid fills"
    yield front, behind, grid
    window.close()


def raise_holds_then_frees(dock: PanelDock, grid: GridFiller) -> None:
    dock.raise_()
    assert grid.held(), "the grid fills on while the raised tab is laid out and painted"
    settle()
    deadline = time.monotonic() + 5.0         # the raise's turns come later on a loaded machine
    while grid.held() and time.monotonic() < deadline:
        settle(0.05)
    assert dock.exposed()
    assert not grid.held(), "the grid is still held after the raise's turns have run"


def test_a_first_raise_and_a_raise_again_hold_the_grid_until_their_turns_ran(tabbed):
    front, behind, grid = tabbed
    raise_holds_then_frees(behind, grid)     # its first raise: built and drawn
    assert behind.built
    raise_holds_then_frees(front, grid)      # raised again: nothing to build or draw, a relayout and a paint
    raise_holds_then_frees(behind, grid)


def test_a_tab_raised_again_at_a_new_width_is_laid_out_while_the_grid_waits(tabbed):
    front, behind, grid = tabbed
    was = front.widget().width()
    raise_holds_then_frees(behind, grid)     # wider than the area: the area widens
    assert behind.width() > front.width()
    resizes = HeldAt(front.widget(), grid, (QEvent.Type.Resize,))
    raise_holds_then_frees(front, grid)
    assert front.widget().width() > was, "raised again, the front tab is laid out at the wider area"
    assert resizes.held and all(resizes.held), "the front tab was laid out again while the grid filled on"
