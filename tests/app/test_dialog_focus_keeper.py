"""Every dialog over the main window gives the window the focus back when it closes with no window active
(a bare X screen, no window manager), whoever opened it: the FocusKeeper follows the dialogs themselves, so
that no call site has to remember to."""
from __future__ import annotations

import pytest
from PySide6.QtCore import QTimer
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QApplication

from explorer.app.window import model_opening, pull_dialog
from explorer.app.window.main_window import MainWindow
from tests.app.window_helpers import new_window

pytestmark = pytest.mark.usefixtures("store_home")  # the store in the test's folder


def _answered_with_no_window_active(qtbot, window, monkeypatch, asked: list) -> None:
    """Once the dialog has the focus: from now on X says no window is active (as on Xvfb once a box closed),
    then the person answers with the box's Escape button (No, Cancel)."""
    def answer() -> None:
        box = QApplication.activeModalWidget()
        if box is None or QGuiApplication.focusWindow() is not box.windowHandle():
            QTimer.singleShot(20, answer)
            return
        monkeypatch.setattr(QApplication, "activeWindow", staticmethod(lambda: None))
        monkeypatch.setattr(MainWindow, "activateWindow", lambda self: asked.append(self))
        box.reject()
    QTimer.singleShot(0, answer)


def test_question_boxes_give_the_focus_back(qtbot, tmp_path, monkeypatch):
    """Xvfb at 1366x768: declining Gemma's terms, declining a pull and cancelling the trace budget's input
    each left no window active; Ctrl+Enter typed next ran nothing."""
    window = new_window(qtbot, tmp_path)
    qtbot.waitUntil(lambda: QApplication.activeWindow() is window, timeout=5000)
    monkeypatch.setattr(model_opening.model_refs, "terms_of", lambda reference: ("gemma3-270m", "The terms."))
    asks = {"terms": lambda: model_opening.terms_accepted(window, window.settings, "gemma3-270m"),
            "pull": lambda: pull_dialog.agreed_to_pull(window, "smollm2-135m"),
            "budget": window.menus.ask_trace_budget}
    for what, ask in asks.items():
        asked: list = []
        _answered_with_no_window_active(qtbot, window, monkeypatch, asked)
        ask()
        qtbot.waitUntil(lambda: window in asked, timeout=5000)
        monkeypatch.undo()
        monkeypatch.setattr(model_opening.model_refs, "terms_of", lambda reference: ("gemma3-270m", "The terms."))
        qtbot.waitUntil(lambda: QApplication.activeWindow() is window, timeout=5000)
    window.close()


def test_a_dialog_that_outlives_its_window_calls_nothing_deleted(qtbot):
    """The keeper followed a dialog's visibility with a lambda that held the window: a dialog hidden after its
    window was deleted raised "Internal C++ object (MainWindow) already deleted" in the event loop, failing
    whichever test ran then (the CI run's test_steady_progress)."""
    from PySide6.QtWidgets import QDialog, QWidget
    from shiboken6 import isValid

    from explorer.app.widgets.dialog_focus import FocusKeeper

    window = QWidget()                                   # not given to qtbot: the test deletes it
    FocusKeeper(window)
    window.show()
    window.activateWindow()
    qtbot.waitUntil(lambda: QGuiApplication.focusWindow() is window.windowHandle(), timeout=5000)
    dialog = QDialog()                                   # no QObject parent: it outlives the window
    qtbot.addWidget(dialog)
    dialog.winId()
    dialog.windowHandle().setTransientParent(window.windowHandle())
    dialog.show()
    dialog.activateWindow()
    qtbot.waitUntil(lambda: QGuiApplication.focusWindow() is dialog.windowHandle(), timeout=5000)
    window.close()
    window.deleteLater()
    qtbot.waitUntil(lambda: not isValid(window), timeout=5000)
    dialog.hide()                                        # raised in the event loop before
    qtbot.wait(50)
