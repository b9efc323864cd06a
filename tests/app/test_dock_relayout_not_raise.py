"""Only a raise holds the attention grid: a dock already in sight that is moved or resized (the window resized, a
separator dragged) is not raised, and the grid fills on meanwhile. Holding it at every Move and Resize held it
through a whole drag. A tab clicked, which moves its dock into sight without raise_(), still holds it."""
from __future__ import annotations

import pytest
from PySide6.QtCore import QObject, Qt
from PySide6.QtWidgets import QLabel, QMainWindow, QTabBar

from explorer.app.widgets.grid_filler import GridFiller
from explorer.app.window.panel_dock import PanelDock
from tests.app.held_grid import HeldAt, settle


@pytest.fixture
def docked(qtbot):
    """A window with a dock at the bottom (two tabs, `front` in front) and one at the right, and a grid."""
    window = QMainWindow()
    qtbot.addWidget(window)
    window.setCentralWidget(QLabel("centre"))
    docks = {}
    for name, area in (("front", Qt.DockWidgetArea.BottomDockWidgetArea),
                       ("behind", Qt.DockWidgetArea.BottomDockWidgetArea),
                       ("side", Qt.DockWidgetArea.RightDockWidgetArea)):
        dock = docks[name] = PanelDock(name, window)
        dock.setObjectName(name)
        dock.setWidget(QLabel(name))
        window.addDockWidget(area, dock)
    window.tabifyDockWidget(docks["front"], docks["behind"])
    window.resize(700, 500)
    window.show()
    docks["front"].raise_()
    settle()
    grid = GridFiller(QObject(window))
    # the raise's own turns done (and a person's request of an earlier test's model thread, on a loaded machine)
    qtbot.waitUntil(lambda: not grid.held(), timeout=10000)           # nothing raised since: the grid fills
    yield window, docks, grid
    window.close()


def test_a_window_resized_moves_and_resizes_its_docks_without_holding_the_grid(docked):
    window, docks, grid = docked
    seen = {name: HeldAt(docks[name], grid) for name in ("front", "side")}
    was = {name: docks[name].geometry() for name in seen}
    window.resize(900, 650)
    for name in seen:
        assert docks[name].geometry() != was[name], f"{name} was not laid out again: the test says nothing"
        assert seen[name].held, f"{name} had no Move or Resize"
    assert not any(seen["front"].held + seen["side"].held), "a dock in sight held the grid at a relayout"
    assert not grid.held()


def test_a_separator_dragged_does_not_hold_the_grid(docked):
    window, docks, grid = docked
    side = HeldAt(docks["side"], grid)
    width = docks["side"].width()
    window.resizeDocks([docks["side"]], [width + 60], Qt.Orientation.Horizontal)
    settle(0.05)
    assert docks["side"].width() != width
    assert side.held and not any(side.held), "the dock resized by its separator held the grid"


def test_a_tab_clicked_still_holds_the_grid_while_it_is_laid_out(docked):
    window, docks, grid = docked
    behind = HeldAt(docks["behind"], grid)
    bar = next(bar for bar in window.findChildren(QTabBar) if bar.count() == 2 and bar.isVisible())
    bar.setCurrentIndex(1 - bar.currentIndex())        # as a click on the tab: no raise_()
    assert docks["behind"].exposed()
    assert behind.held and all(behind.held[1:]), "the tab moved into sight was laid out while the grid filled on"
    assert grid.held()
    settle()
    assert not grid.held(), "the grid is still held after the raise's turns have run"
