"""Dock proportions survive a shrink and a regrow of the window; any panel can take the whole window
(double-click its title, again to restore); every dock and dock tab says what its panel shows; Help ▸
Keyboard Shortcuts lists every shortcut the window's actions carry and the mouse gestures."""
from __future__ import annotations

import re

import pytest
from PySide6.QtCore import QPoint, QSize, Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QTabBar

from explorer.app.window.dock_shares import in_sight
from tests.app.screen_fit import assert_fits, open_settled, settle

TOLERANCE_PX = 6


@pytest.fixture
def window(qapp, tmp_path, screen, monkeypatch):
    window = open_settled(tmp_path, monkeypatch, 0.8)
    yield window
    window.close()


def dock_sizes(window) -> dict[str, QSize]:
    return {name: dock.size() for name, dock in window.docks.items() if in_sight(dock)}


def close_enough(before: dict, after: dict) -> list[str]:
    return [f"{name}: {before[name].toTuple()} -> {after.get(name, QSize()).toTuple()}" for name in before
            if name not in after or abs(before[name].width() - after[name].width()) > TOLERANCE_PX
            or abs(before[name].height() - after[name].height()) > TOLERANCE_PX]


def test_a_shrink_and_a_regrow_give_the_docks_back_their_proportions(window, screen):
    window.docks["kv_cache"].raise_()                  # a tab raised after the layout was made stays in front
    settle(0.3)
    before, size = dock_sizes(window), window.size()
    assert {"kv_cache", "tokens", "next_token", "prompt"} <= set(before)
    window.resize(screen.width() * 2 // 3, screen.height() * 3 // 4)
    settle(0.4)
    window.resize(size)
    settle(0.6)
    assert not close_enough(before, dock_sizes(window)), close_enough(before, dock_sizes(window))
    assert in_sight(window.docks["kv_cache"])
    assert_fits(window, screen, "after a shrink and a regrow")


def double_click_title(dock) -> None:
    QTest.mouseDClick(dock, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, QPoint(40, 4))
    settle(0.4)


def test_double_clicking_a_title_maximises_the_panel_and_again_restores_it(window, screen):
    before = dock_sizes(window)
    attention = window.docks["attention"]
    double_click_title(attention)
    assert not attention.isFloating()
    assert [name for name, dock in window.docks.items() if dock.isVisible()] == ["attention"]
    chrome = window.menuBar().height() + window.statusBar().height()
    assert attention.height() >= window.height() - chrome - 120 and attention.width() >= window.width() - 12
    assert_fits(window, screen, "a panel maximised")
    double_click_title(attention)
    assert not close_enough(before, dock_sizes(window)), close_enough(before, dock_sizes(window))
    assert all(not dock.isHidden() for dock in window.docks.values())


def test_every_dock_and_dock_tab_says_what_its_panel_shows(window):
    for name, dock in window.docks.items():
        tip = dock.toolTip()
        assert tip.endswith(".") and 20 <= len(tip) <= 300 and tip.count(". ") == 0, (name, tip)
    titles = {dock.windowTitle(): dock.toolTip() for dock in window.docks.values()}
    bars = [bar for bar in window.findChildren(QTabBar) if bar.parent() is window and bar.count()]
    assert bars, "the bottom docks are tabbed"
    for bar in bars:
        for index in range(bar.count()):
            assert bar.tabToolTip(index) == titles[bar.tabText(index)], bar.tabText(index)


def test_f1_lists_every_shortcut_the_actions_carry_and_the_gestures(window):
    help_action = next(a for a in window.menus.help.actions() if a.shortcut() == QKeySequence("F1"))
    help_action.trigger()
    listed = window.dialogs[-1]
    # every key a keyboard has (Qt's codes from Key_Back on are remote-control keys, e.g. "Exit"), written as the
    # guide writes it: the main Enter key is Qt's "Return"
    carried = {s.toString(QKeySequence.SequenceFormat.NativeText).replace("Return", "Enter")
               for a in window.findChildren(QAction) for s in a.shortcuts()
               if all(s[i].key().value < Qt.Key.Key_Back.value for i in range(s.count()))}
    assert {"Ctrl+Shift+O", "Ctrl+Q", "F1", "Ctrl+E", "Ctrl+O", "Space", "Ctrl+Enter"} <= carried
    cells = {key for cell in re.findall(r"<b>(.*?)</b>", listed) for key in cell.split(", ")}
    assert carried <= cells, carried - cells
    assert "Alt+click" in listed and "Double-click a panel" in listed
