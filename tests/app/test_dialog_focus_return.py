"""The main window takes the focus back after a progress dialog over it closes, even where the platform had
not made the dialog active yet (a bare X screen, no window manager): Ctrl+Enter must still reach the window."""
from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QApplication, QProgressDialog

from explorer.app.widgets.dialog_focus import close_returning_focus
from explorer.app.window.main_window import MainWindow
from tests.app.window_helpers import new_window

pytestmark = pytest.mark.usefixtures("store_home")  # the store in the test's folder


def test_a_progress_dialog_that_hid_itself_gives_the_window_the_focus(qtbot, tmp_path, monkeypatch):
    """Exporting SmolLM2's attention as a GIF on Xvfb at 1366x768: the frames' progress dialog was shown, took
    the focus and hid itself at the last frame; no window of the app was active afterwards, and Ctrl+Enter
    typed next ran nothing (the drive's check after each action; the next model's run used the old prompt)."""
    window = new_window(qtbot, tmp_path)
    qtbot.waitUntil(lambda: QApplication.activeWindow() is window, timeout=5000)
    dialog = QProgressDialog("Drawing the frames…", "Cancel", 0, 3, window.docks["attention"].widget())
    dialog.setAttribute(Qt.WidgetAttribute.WA_ShowWithoutActivating)     # its activation never reaches the app
    dialog.show()
    qtbot.waitExposed(dialog)
    dialog.setValue(3)                                 # the last frame drawn: it hides itself (autoClose)
    assert not dialog.isVisible()
    # On Xvfb the focus landed on no window at all, which the offscreen platform never does: it hands the focus to
    # the closed dialog, and the FocusKeeper (which moves a focus landing on a hidden window) is taken out here.
    QGuiApplication.instance().focusWindowChanged.disconnect(window.focus_keeper._focus_changed)
    asked = []
    monkeypatch.setattr(QApplication, "activeWindow", staticmethod(lambda: None))  # X gave the focus to no window
    monkeypatch.setattr(MainWindow, "activateWindow", lambda self: asked.append(self))
    close_returning_focus(dialog)
    qtbot.waitUntil(lambda: window in asked, timeout=5000)
    window.close()



def test_the_window_takes_the_focus_back_after_the_shortcuts_list_and_about(qtbot, tmp_path, monkeypatch):
    """F1 (Help ▸ Keyboard Shortcuts) and Help ▸ About on Xvfb at 1366x768 and 1920x1080: closed with OK, the
    box left no window active (and the platform said nothing of it: the focus window went with the box);
    Ctrl+Enter, Space and F1 itself then did nothing until a click (the drive's check after each action)."""
    from PySide6.QtWidgets import QMessageBox

    window = new_window(qtbot, tmp_path)
    qtbot.waitUntil(lambda: QApplication.activeWindow() is window, timeout=5000)
    asked = []
    for kind in ("information", "about"):
        monkeypatch.setattr(QMessageBox, kind, lambda *args: None)               # closed by the person
    monkeypatch.setattr(QApplication, "activeWindow", staticmethod(lambda: None))  # and no window is active
    monkeypatch.setattr(MainWindow, "activateWindow", lambda self: asked.append(self))
    window.menus.shortcuts()
    assert asked == [window], "F1's list closed, the window did not take the focus back"
    window.menus.about()
    assert asked == [window, window], "About closed, the window did not take the focus back"
    window.close()
