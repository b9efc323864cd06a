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
    shown (a dialog closed before the platform's activation of it arrived)."""

    def __init__(self, window: QWidget) -> None:
        super().__init__(window)
        self.window = window
        QGuiApplication.instance().focusWindowChanged.connect(self._focus_changed)

    def _focus_changed(self, focus: QWindow | None) -> None:
        if focus is not None and not focus.isVisible() and self.window.isVisible():
            self.window.activateWindow()
