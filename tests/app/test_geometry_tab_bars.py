"""Qt's restoreState leaves no bar of tabbed docks behind: after a panel is maximised and restored (a
double-click on its title, View ▸ Presentation), after a restart with the saved layout, and after View ▸
Reset Layout, the window shows one bar per group of tabbed docks, each along its group.

Like the relayout of Reset Layout, a restore makes new bars; the old ones stayed shown with their tabs
(one more after every maximise and restore, each out of sight with the one panel it had shown).
"""
from __future__ import annotations

import pytest
from PySide6.QtWidgets import QDockWidget, QTabBar

from tests.app.screen_fit import settle
from tests.app.stress_window import reset_layout
from tests.app.test_layout_reset_tab_bars import assert_one_bar_per_group
from tests.app.window_helpers import new_window

pytestmark = pytest.mark.usefixtures("store_home")  # the store in the test's folder


def tab_groups(window) -> set[frozenset]:
    """The groups of tabbed docks a person can see, by title: each docked, shown dock with those tabbed with
    it, where at least two are shown (a group of one has no bar)."""
    groups = set()
    for dock in window.findChildren(QDockWidget):
        if dock.isVisible() and not dock.isFloating():
            group = {dock, *[d for d in window.tabifiedDockWidgets(dock) if d.isVisible()]}
            if len(group) > 1:
                groups.add(frozenset(d.windowTitle() for d in group))
    return groups


def shown_bars(window) -> list[QTabBar]:
    """The bars of tabbed docks that are shown and hold tabs, in sight or not."""
    return [bar for bar in window.findChildren(QTabBar) if bar.parent() is window and bar.isVisible() and bar.count()]


def assert_bars_of_groups(window, when: str) -> None:
    bars = shown_bars(window)
    groups = tab_groups(window)
    tabs = [tuple(bar.tabText(i) for i in range(bar.count())) for bar in bars]
    assert len(bars) == len(groups), f"{when}: {len(bars)} bars of tabs shown for {len(groups)} groups: {tabs}"
    assert {frozenset(t) for t in tabs} == groups, f"{when}: the bars show {tabs}"
    assert_one_bar_per_group(window, when)


def test_maximise_presentation_and_reset_leave_one_bar_per_group(qtbot, tmp_path, screen):
    window = new_window(qtbot, tmp_path)
    try:
        settle(0.3)
        assert_bars_of_groups(window, "opened")
        attention = window.docks["attention"]
        for round_ in range(3):
            attention.maximise_requested.emit(attention)          # a double-click on the title
            settle(0.2)
            attention.maximise_requested.emit(attention)          # again: the layout back
            settle(0.3)
            assert_bars_of_groups(window, f"maximised and restored, {round_ + 1} times")
        window.presentation.set_on(True)
        settle(0.3)
        window.presentation.set_on(False)
        settle(0.4)
        assert_bars_of_groups(window, "View ▸ Presentation on and off")
        reset_layout(window)
        settle(0.4)
        assert_bars_of_groups(window, "View ▸ Reset Layout")
    finally:
        if window.presentation.on:
            window.presentation.set_on(False)
        window.close()


def test_the_layout_restored_at_start_leaves_one_bar_per_group(qtbot, tmp_path, screen):
    first = new_window(qtbot, tmp_path)
    attention = first.docks["attention"]
    attention.maximise_requested.emit(attention)
    settle(0.2)
    attention.maximise_requested.emit(attention)
    settle(0.3)
    first.close()                                                 # saves the layout
    again = new_window(qtbot, tmp_path)
    try:
        settle(0.5)
        assert again.settings.dock_state() is not None, "the layout was saved and is restored"
        assert_bars_of_groups(again, "restarted with the saved layout")
        again.docks["attention"].maximise_requested.emit(again.docks["attention"])
        settle(0.2)
        again.docks["attention"].maximise_requested.emit(again.docks["attention"])
        settle(0.3)
        assert_bars_of_groups(again, "restarted, then a panel maximised and restored")
    finally:
        again.close()
