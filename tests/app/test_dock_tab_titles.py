"""The panels' tabs read their whole titles at 1366x768 as at 1920x1080: where they do not all fit the
width, the tab bar scrolls (arrows at its end) rather than cutting every title to "Attent…".

What a tab reads is what Qt paints on it: QTabBar.initStyleOption gives the text after elision.
"""
from __future__ import annotations

import pytest
from PySide6.QtWidgets import QStyleOptionTab, QTabBar

from tests.app.screen_fit import assert_fits, settle
from tests.app.stress_window import learn, reset_layout
from tests.app.window_helpers import new_window

pytestmark = pytest.mark.usefixtures("store_home")  # the store in the test's folder


def dock_tab_bars(window) -> list[QTabBar]:
    """The tab bars of tabbed docks (the window's own children, not a panel's inner tabs), in view."""
    return [bar for bar in window.findChildren(QTabBar) if bar.parent() is window and bar.isVisible()]


def cut_titles(window) -> list[str]:
    """'painted' for 'title' of every dock tab whose painted text is not its whole title."""
    cut = []
    for bar in dock_tab_bars(window):
        for index in range(bar.count()):
            option = QStyleOptionTab()
            bar.initStyleOption(option, index)
            if option.text != bar.tabText(index):
                cut.append(f"{option.text!r} for {bar.tabText(index)!r}")
    return cut


def in_view(bar: QTabBar, index: int) -> bool:
    return bar.rect().contains(bar.tabRect(index))


def test_every_dock_tab_reads_its_whole_title(qtbot, tmp_path, screen):
    window = new_window(qtbot, tmp_path)
    try:
        settle(0.5)
        assert dock_tab_bars(window), "no tabbed docks in view"
        assert not cut_titles(window), f"first window: {cut_titles(window)}"
        for bar in dock_tab_bars(window):
            assert bar.width() <= window.width(), f"a tab bar {bar.width()} px wide in a {window.width()} px window"
        reset_layout(window)
        settle(0.5)
        assert not cut_titles(window), f"after Reset Layout: {cut_titles(window)}"
        learn(window)                            # the panels' width shrinks by Learn's column
        settle(0.5)
        assert not cut_titles(window), f"with Learn open: {cut_titles(window)}"
        last = window.docks["experiments"]
        last.raise_()
        settle(0.3)
        # the bar of Experiments's group (Qt may keep a dissolved group's bar too, with the same titles)
        bar = next(b for b in dock_tab_bars(window) if b.tabText(b.currentIndex()) == "Experiments")
        assert in_view(bar, bar.currentIndex()), \
            f"Experiments raised, its tab at {bar.tabRect(bar.currentIndex())} lies outside the bar's {bar.rect()}"
        assert_fits(window, screen, "with every tab whole", plots=False)
    finally:
        window.close()
