"""The main window makes itself the active one on a bare X screen (no window manager), so that its shortcuts reach
it: after launch, and after an error dialog closes."""
from __future__ import annotations


def test_the_window_asks_to_be_the_active_one_when_nothing_made_it_so(qtbot, tmp_path, monkeypatch):
    """On a bare X screen (no window manager) nothing activated the new main window: F1, Ctrl+Enter and every
    other shortcut reached no window of the app after launch (seen under Xvfb with xdotool). The offscreen
    platform activates a shown window itself, so here the platform's answer is "no active window"."""
    from PySide6.QtWidgets import QApplication

    from explorer.app.window.main_window import MainWindow
    from tests.app.window_helpers import new_window

    asked = []
    monkeypatch.setattr(QApplication, "activeWindow", staticmethod(lambda: None))
    monkeypatch.setattr(MainWindow, "activateWindow", lambda self: asked.append(self))
    window = new_window(qtbot, tmp_path)
    qtbot.waitUntil(lambda: window in asked, timeout=5000)
    window.close()


def test_the_window_takes_the_focus_back_after_an_error_dialog(qtbot, tmp_path, monkeypatch):
    """Opening a bad file on a bare X screen: once its warning closed no window was active, and every shortcut
    (F1, Ctrl+Enter, Space) did nothing until a click (seen under Xvfb with xdotool)."""
    from PySide6.QtWidgets import QApplication, QMessageBox

    from explorer.app.window.main_window import MainWindow
    from tests.app.window_helpers import new_window

    window = new_window(qtbot, tmp_path)
    qtbot.waitUntil(lambda: QApplication.activeWindow() is window, timeout=5000)
    asked = []
    monkeypatch.setattr(QMessageBox, "warning", lambda *args: None)              # closed by the person
    monkeypatch.setattr(QApplication, "activeWindow", staticmethod(lambda: None))  # and no window is active
    monkeypatch.setattr(MainWindow, "activateWindow", lambda self: asked.append(self))
    window.show_error("bad.json is not valid JSON (Expecting property name at line 1).")
    assert asked == [window]
    window.close()
