"""After View ▸ Reset Layout, and then Help ▸ Learn or a layout given back after a shrink, the window shows one
bar per group of tabbed docks, each where its group is.

Qt 6 gives every tabbed group it builds a new bar and leaves the bar of a group emptied by a relayout on
screen, at its old place, with its old tabs. After Reset Layout and then Learn at 1366x768 a second bar of
all the panels' tabs ran on under the Learn column.
"""
from __future__ import annotations

import pytest
from PySide6.QtWidgets import QTabBar

from tests.app.layout_steps import learn, opened_window, reset_layout, then

pytestmark = pytest.mark.usefixtures("store_home")  # the store in the test's folder


def shown_dock_bars(window) -> list[QTabBar]:
    """The bars of tabbed docks a person can see (a panel's own tab widgets have bars of their own)."""
    return [bar for bar in window.findChildren(QTabBar)
            if bar.parent() is window and bar.isVisible() and bar.count() and not bar.visibleRegion().isEmpty()]


def titles(bar: QTabBar) -> tuple[str, ...]:
    return tuple(bar.tabText(i) for i in range(bar.count()))


def assert_one_bar_per_group(window, when: str) -> None:
    bars = shown_dock_bars(window)
    tabs = [titles(bar) for bar in bars]
    assert len(set(tabs)) == len(tabs), f"{when}: {len(tabs)} bars show the same tabs: {tabs}"
    for bar in bars:
        # a group's bar runs along the dock in front of it: as wide as that dock, under it
        front = next(d for d in window.docks.values() if d.windowTitle() == bar.tabText(bar.currentIndex()))
        assert abs(bar.width() - front.width()) <= 8 and abs(bar.x() - front.x()) <= 8, \
            f"{when}: the bar of {titles(bar)[:3]}… is at x {bar.x()}, {bar.width()} px wide; " \
            f"its front dock {front.windowTitle()!r} at x {front.x()}, {front.width()} px"
    dock = getattr(window, "learn_dock", None)
    if dock is not None and dock.isVisible():
        over = [titles(bar)[:3] for bar in bars if bar.geometry().intersects(dock.geometry())]
        assert not over, f"{when}: a bar of dock tabs runs under the Learn column: {over}"


def test_reset_layout_then_learn_leaves_one_bar_of_tabs(qtbot, tmp_path, screen):
    with opened_window(qtbot, tmp_path) as window:
        assert_one_bar_per_group(window, "opened")
        then(window, reset_layout)
        assert_one_bar_per_group(window, "View ▸ Reset Layout")
        then(window, learn)
        assert_one_bar_per_group(window, "Reset Layout, then Help ▸ Learn")
        then(window, reset_layout)
        assert_one_bar_per_group(window, "Learn open, Reset Layout again")


def test_a_reset_layout_given_back_after_a_shrink_leaves_one_bar_of_tabs(qtbot, tmp_path, screen):
    """The layout made by Reset Layout is restored once the window is back at its size after a shrink."""
    with opened_window(qtbot, tmp_path) as window:
        then(window, reset_layout)
        size = window.size()
        then(window, lambda shrunk: shrunk.resize(size.width() - 200, size.height() - 100))
        then(window, lambda regrown: regrown.resize(size))
        assert not window.dock_shares.resized_since, "the layout was not given back"
        then(window, learn)
        assert_one_bar_per_group(window, "Reset Layout, shrunk, regrown, Help ▸ Learn")
