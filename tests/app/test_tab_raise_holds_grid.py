"""A tab raised holds the attention grid until the window has laid it out and painted it: raised again at 8,000
tokens while the grid filled, the KV cache's relayout and paint took 40-50 ms of the GUI thread's CPU but froze the
window 94-179 ms, the GUI thread waiting on the grid's threads for Python's lock. The grid (GridFiller.held) waits
from the raise, both for a tab raised again (its panel built, nothing to draw) and a first raise, and no longer once
the raise's turns have run."""
from __future__ import annotations

import time

import pytest
from PySide6.QtCore import QObject, Qt
from PySide6.QtWidgets import QApplication, QLabel, QMainWindow

from explorer.app.widgets.grid_filler import GridFiller
from explorer.app.window.panel_dock import PanelDock

SETTLE_S = 0.3


def settle(seconds: float = SETTLE_S) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        QApplication.processEvents()
        time.sleep(0.01)


@pytest.fixture
def tabbed(qtbot):
    """Two docks tabbed together in a window, the first in front, and a grid beside them."""
    window = QMainWindow()
    qtbot.addWidget(window)
    window.setCentralWidget(QLabel("centre"))
    front = PanelDock("front", window)
    front.setWidget(QLabel("front"))
    behind = PanelDock("behind", window, build=lambda: QLabel("behind, built at its first raise"))
    for dock in (front, behind):
        dock.setObjectName(dock.windowTitle())
        window.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, dock)
    window.tabifyDockWidget(front, behind)
    window.resize(600, 400)
    window.show()
    front.raise_()
    settle()
    grid = GridFiller(QObject(window))
    assert not grid.held(), "nothing raised yet, the grid fills"
    yield front, behind, grid
    window.close()


def raise_holds_then_frees(dock: PanelDock, grid: GridFiller) -> None:
    dock.raise_()
    assert grid.held(), "the grid fills on while the raised tab is laid out and painted"
    settle()
    assert dock.exposed()
    assert not grid.held(), "the grid is still held after the raise's turns have run"


def test_a_first_raise_and_a_raise_again_hold_the_grid_until_their_turns_ran(tabbed):
    front, behind, grid = tabbed
    raise_holds_then_frees(behind, grid)     # its first raise: built and drawn
    assert behind.built
    raise_holds_then_frees(front, grid)      # raised again: nothing to build or draw, a relayout and a paint
    raise_holds_then_frees(behind, grid)
