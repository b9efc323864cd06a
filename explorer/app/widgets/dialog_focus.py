"""Keeping the main window's shortcuts alive when a progress dialog over it closes.

A window manager gives the focus back to the main window when a dialog over it closes. Without one
(a bare X screen, the offscreen platform) no window is active afterwards, and Space, Ctrl+Enter and
every other window shortcut do nothing until the person clicks the window. Worse, a dialog closed
right after it was shown (a quick load) may be handed the focus after it is gone.
"""
from __future__ import annotations

from PySide6.QtCore import QObject, QTimer
from PySide6.QtGui import QGuiApplication, QWindow
from PySide6.QtWidgets import QApplication, QWidget


def take_focus_if_none(window: QWidget) -> None:
    """Make `window` the active window when the app has none: a window manager activates a new window and
    gives the focus back after a dialog; on a bare X screen nothing does, and F1, Ctrl+Enter, Space and every
    other shortcut did nothing after launch, or after a warning, until the person clicked into a text field."""
    if QApplication.activeWindow() is None and window.isVisible():
        window.activateWindow()


def close_returning_focus(dialog: QWidget) -> None:
    """Close `dialog`; if it was the active window, make its parent window the active one again; if it was ever
    shown, do so too when no window is active now or once the platform has handled the close. A progress
    dialog hides itself at its last step: SmolLM2's animation export on a bare X screen took the focus to its
    dialog, which hid when the last frame was drawn, and no window was active afterwards: Ctrl+Enter typed next
    did nothing."""
    was_active = QApplication.activeWindow() is dialog
    shown = dialog.windowHandle() is not None            # made a window of its own: shown at some time
    dialog.close()
    parent = dialog.parentWidget()
    if parent is None:
        return
    window = parent.window()
    if window.isVisible() and (was_active or (shown and QApplication.activeWindow() is None)):
        window.activateWindow()
    if shown:
        QTimer.singleShot(0, window, lambda: take_focus_if_none(window))


class FocusKeeper(QObject):
    """Gives `window` the focus back whenever the application's focus lands on a window that is not
    shown (a dialog closed before the platform's activation of it arrived), and whenever a dialog over it
    that held the focus closes with no window active: on a bare X screen every question box (a model's
    terms, the pull question, the budget's choices, the budget's input) left no window active once
    answered, and Ctrl+Enter, Space and F1 did nothing until a click. One keeper for every dialog, so that
    no call site has to remember it; with a window manager the window is active by then, and nothing is done."""

    def __init__(self, window: QWidget) -> None:
        super().__init__(window)
        self.window = window
        self._watched: set[int] = set()       # the dialogs' windows whose hiding is followed
        QGuiApplication.instance().focusWindowChanged.connect(self._focus_changed)

    def _focus_changed(self, focus: QWindow | None) -> None:
        if focus is None or not self.window.isVisible():
            return
        if not focus.isVisible():
            self.window.activateWindow()
        elif self._over_window(focus) and id(focus) not in self._watched:
            self._watched.add(id(focus))
            # a method of this keeper, not a lambda: Qt drops the connection with the keeper (its window's
            # child), so a dialog that outlives the window (a progress dialog hidden later) calls nothing deleted
            focus.visibleChanged.connect(self._on_dialog_visible)
            focus.destroyed.connect(lambda _=None, key=id(focus): self._watched.discard(key))

    def _over_window(self, focus: QWindow) -> bool:
        """`focus` is a window of its own over this one (a dialog, a message box), not this window."""
        own = self.window.windowHandle()
        parent = focus.transientParent()
        return focus is not own and parent is not None and parent is own

    def _on_dialog_visible(self, visible: bool) -> None:
        self._dialog_shown(self.sender(), visible)

    def _dialog_shown(self, dialog: QWindow, visible: bool) -> None:
        if visible or not self.window.isVisible():
            return
        active = QApplication.activeWindow()
        if active is None or active.windowHandle() is dialog:
            self.window.activateWindow()
        QTimer.singleShot(0, self.window, lambda: take_focus_if_none(self.window))
