"""Every dock's title bar holds its "?", float and close buttons side by side, none over another and all
inside the bar, at the normal font and in View ▸ Presentation, and the bar is as tall as its title's font.

The expectations are geometry read from the widgets Qt shows (its own buttons' rectangles, the panel's top
edge, the font's line height), not a size copied from the dock.
"""
from __future__ import annotations

from PySide6.QtCore import QRect
from PySide6.QtGui import QFontMetrics
from PySide6.QtWidgets import QAbstractButton

from explorer.app.window.panel_dock import QT_TITLE_BUTTONS
from tests.app.projector import toggle_presentation
from tests.app.screen_fit import settle

TITLE_BUTTONS = (*QT_TITLE_BUTTONS, "learn_button")


def title_faults(dock) -> list[str]:
    """What is wrong with the dock's title bar: buttons that overlap, stick out of the bar, or a bar
    shorter than its font's line."""
    title_px = dock.widget().geometry().top()
    bar = QRect(0, 0, dock.width(), title_px)
    buttons = {b.objectName(): QRect(b.x(), b.y(), b.width(), b.height())     # copies: Qt may move them
               for b in dock.findChildren(QAbstractButton) if b.objectName() in TITLE_BUTTONS and b.isVisible()}
    faults = [f"{name} {rect.getRect()} is outside the title bar {bar.getRect()}"
              for name, rect in buttons.items() if not bar.contains(rect)]
    names = sorted(buttons)
    faults += [f"{a} {buttons[a].getRect()} overlaps {b} {buttons[b].getRect()}"
               for i, a in enumerate(names) for b in names[i + 1:] if buttons[a].intersects(buttons[b])]
    if "learn_button" not in buttons:
        faults.append("the ? is not shown")
    if title_px < QFontMetrics(dock.font()).height():
        faults.append(f"the title bar ({title_px} px) is lower than its font's line")
    return faults


def shown_docks_faults(window) -> dict[str, list[str]]:
    faults = {}
    for name, dock in window.docks.items():
        if dock.isVisible() and not dock.isFloating():
            dock.widget()                              # built, as a person looking at it sees it
    window.repaint()
    for name, dock in window.docks.items():
        if dock.isVisible() and not dock.isFloating() and dock.titleBarWidget() is None:
            faults[name] = title_faults(dock)
    return {name: f for name, f in faults.items() if f}


def test_title_buttons_sit_side_by_side_at_the_normal_font(projector_window):
    settle(0.3)
    assert shown_docks_faults(projector_window) == {}


def test_title_buttons_sit_side_by_side_in_presentation_and_back(projector_window):
    window = projector_window
    window.docks["attention"].widget().setFocus()
    settle(0.2)
    toggle_presentation(window)
    shown = [name for name, dock in window.docks.items() if dock.isVisible()]
    assert shown == ["attention"] and shown_docks_faults(window) == {}
    toggle_presentation(window)
    settle(0.3)
    assert shown_docks_faults(window) == {}
