"""View ▸ Presentation shows the panel in focus: with the keyboard focus in the Learn column, Learn is the one
shown, not a panel the person was not looking at (it hid Learn and put up another panel)."""
from __future__ import annotations

from PySide6.QtWidgets import QMessageBox

from explorer.app.window.learn_placement import open_learn
from tests.app.layout_probe import open_window
from tests.app.projector import toggle_presentation, wait_idle
from tests.app.screen_fit import SCREENS, emulated_screen, settle


def test_presentation_with_the_focus_in_learn_shows_learn(qapp, tmp_path, monkeypatch):
    monkeypatch.setattr(QMessageBox, "warning", lambda *a: None)
    with emulated_screen(SCREENS["1366x768"]):
        window = open_window(str(tmp_path / "settings.ini"))
        try:
            settle(0.5)
            learn = open_learn(window)
            settle(0.5)
            learn.setFocus()
            settle(0.2)
            toggle_presentation(window)
            assert window.learn_dock.isVisible()
            assert window.dock_shares.maximised[0] is window.learn_dock
            shown = [name for name, dock in window.docks.items() if dock.isVisible()]
            assert shown == [], shown                   # the one panel in focus takes the window
            toggle_presentation(window)
            assert window.learn_dock.isVisible()
        finally:
            wait_idle(window)
            window.close()
            window.deleteLater()
            settle(0.2)
