"""The bars of tabbed docks: Qt's main window makes a new bar for every tabbed group it builds, and leaves the
bar of a group it emptied (a relayout, a restoreState) on screen with its old tabs. Here they are told apart
from the bars in use and put away, and every bar shows its titles whole.
"""
from __future__ import annotations

from contextlib import contextmanager

import shiboken6
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDockWidget, QMainWindow, QTabBar


def whole_titles(bar: QTabBar) -> None:
    """A bar of tabbed docks scrolls, with arrows at its end, rather than cutting its titles: Qt's main window
    makes them eliding, and at 1366 px the twelve panels' tabs all read like "Attent…" and "Ma…"."""
    bar.setElideMode(Qt.TextElideMode.ElideNone)
    bar.setUsesScrollButtons(True)


def dock_tab_bars(window: QMainWindow) -> list[QTabBar]:
    """The bars of tabbed docks (the main window's own children; a panel's tab widget keeps its bar)."""
    return [bar for bar in window.findChildren(QTabBar) if bar.parent() is window]


def put_away(bar: QTabBar) -> None:
    """Hide a bar of tabbed docks that no group uses any more, and remove its tabs, so that it shows nothing
    if shown again."""
    bar.hide()
    bar.blockSignals(True)          # its currentChanged would ask the layout about a bar it forgot
    while bar.count():
        bar.removeTab(0)
    bar.blockSignals(False)


@contextmanager
def relaid(window: QMainWindow):
    """Lay the docks out again (every dock taken out and put back) and put away the tab bars of the
    layout before. Qt 6 gives every tabbed group it builds a new bar, and the bar of a group emptied
    this way is neither laid out nor deleted: it stayed on screen at its old place and width, with its
    old tabs, under the columns of the new layout (after View ▸ Reset Layout and Help ▸ Learn at
    1366x768, a second bar of all the panels' tabs ran under the Learn column)."""
    before = dock_tab_bars(window)
    yield
    for bar in before:
        if bar in dock_tab_bars(window):
            put_away(bar)


def front_dock(window: QMainWindow, bar: QTabBar) -> QDockWidget | None:
    """The dock a bar's current tab stands for (Qt keeps the dock's address as the tab's data)."""
    address = bar.tabData(bar.currentIndex())
    return next((dock for dock in window.findChildren(QDockWidget)
                 if shiboken6.isValid(dock) and shiboken6.getCppPointer(dock)[0] == address), None)


def runs_along(bar: QTabBar, dock: QDockWidget | None) -> bool:
    """Whether `bar` lies where Qt lays out the bar of `dock`'s group: as wide as the dock, at its left
    edge, against its top or its bottom."""
    if dock is None or not dock.isVisible() or dock.isFloating():
        return False
    bar_rect, dock_rect, near = bar.geometry(), dock.geometry(), 8
    return (abs(bar_rect.left() - dock_rect.left()) <= near and abs(bar_rect.width() - dock_rect.width()) <= near
            and (abs(bar_rect.top() - dock_rect.bottom()) <= near or abs(bar_rect.bottom() - dock_rect.top()) <= near))


def put_away_stale_bars(window: QMainWindow) -> list[QTabBar]:
    """After Qt's restoreState (at start, and when a maximised panel or a shrunk window gives its layout
    back), put away the bars of tabbed docks that no group uses: like a relayout, a restore makes new bars
    and left the old ones shown, with their tabs, where they were (one more after every maximise and
    restore, each out of sight with the one panel it had shown). A bar in use runs along the dock in front
    of its group; only a shown window's bars are judged, once the layout has placed them."""
    if not window.isVisible():
        return []
    window.layout().activate()                   # a layout still pending places its bars first
    stale = [bar for bar in dock_tab_bars(window)
             if not bar.isHidden() and bar.count() and not runs_along(bar, front_dock(window, bar))]
    for bar in stale:
        put_away(bar)
    return stale
