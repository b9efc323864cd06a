"""View ▸ Presentation right after launch: the keyboard focus is in the prompt editor, and Presentation showed
the Prompt panel over the whole window (an empty text box on a projector). It shows a panel that draws
something: attention's map, or the panel the person last looked at; off again, the layout as it was."""
from __future__ import annotations

from contextlib import contextmanager

import pytest
from PySide6.QtWidgets import QApplication, QComboBox, QMessageBox

from explorer.app.start import launch
from explorer.app.window.dock_shares import in_sight
from tests.app.layout_probe import open_window
from tests.app.projector import toggle_presentation, wait_idle
from tests.app.screen_fit import SCREENS, emulated_screen, settle
from tests.app.window_helpers import prefilled

pytestmark = pytest.mark.usefixtures("store_home")  # the store in the test's folder


def shown(window) -> list[str]:
    """The panels in sight (docked, shown, the front tab of their group), by name."""
    return sorted(name for name, dock in window.docks.items() if in_sight(dock))


def geometry(window) -> dict[str, tuple[int, int, int, int]]:
    """Where each panel in sight is."""
    return {name: dock.geometry().getRect() for name, dock in window.docks.items() if in_sight(dock)}


def test_presentation_after_launch_shows_attention_not_the_prompt(launched, tiny, monkeypatch):
    monkeypatch.delenv(launch.NO_RESTORE_ENV, raising=False)
    monkeypatch.setattr(QMessageBox, "warning", lambda *a: None)
    seen = {}

    def present(window) -> bool:
        if not prefilled(window):
            return False
        settle(0.5)
        window.prompt.setFocus()
        settle(0.2)
        seen["focus_in_prompt"] = QApplication.focusWidget() is window.prompt
        seen["before"], seen["layout"] = shown(window), geometry(window)
        toggle_presentation(window)
        seen["maximised"] = next(n for n, d in window.docks.items() if d is window.dock_shares.maximised[0])
        seen["during"] = shown(window)
        toggle_presentation(window)
        settle(0.4)
        seen["after"], seen["layout_after"] = shown(window), geometry(window)
        return True

    launched(["--no-restore", "--model", str(tiny)], present)
    assert seen["focus_in_prompt"]
    attention = "attention"
    assert seen["maximised"] == attention and seen["during"] == [attention], seen
    assert seen["after"] == seen["before"], seen
    for name, rect in seen["layout"].items():               # the docks where they were, within a pixel or two
        assert all(abs(a - b) <= 2 for a, b in zip(rect, seen["layout_after"][name])), (name, seen)


@contextmanager
def window_at_1366(tmp_path, monkeypatch):
    """The layout probe's window on an emulated 1366x768 screen, settled; closed (and the font given back) after."""
    monkeypatch.setattr(QMessageBox, "warning", lambda *a: None)
    font = QApplication.font()
    with emulated_screen(SCREENS["1366x768"]):
        window = open_window(str(tmp_path / "settings.ini"))
        try:
            settle(0.5)
            yield window
        finally:
            QApplication.setFont(font)
            wait_idle(window)
            window.close()
            window.deleteLater()
            settle(0.2)


def test_presentation_from_the_prompt_shows_the_panel_last_looked_at(qapp, tmp_path, monkeypatch):
    with window_at_1366(tmp_path, monkeypatch) as window:
        window.docks["next_token"].widget().setFocus()          # looked at Next token, then typed
        settle(0.1)
        window.prompt.setFocus()
        settle(0.1)
        toggle_presentation(window)
        assert window.dock_shares.maximised[0] is window.docks["next_token"]
        assert shown(window) == ["next_token"]
        toggle_presentation(window)
        window.menus.view.setFocus()                            # the focus in no panel: the last one still
        window.docks["next_token"].close()                      # closed since: attention's map instead
        settle(0.2)
        toggle_presentation(window)
        assert window.dock_shares.maximised[0] is window.docks["attention"]
        toggle_presentation(window)


def test_presentation_and_ctrl_e_skip_the_panel_last_looked_at_once_it_is_a_tab_behind_another(qapp, tmp_path,
                                                                                              monkeypatch):
    """Experiments looked at, then Embeddings raised over it in their tab group and the focus in the Model box:
    Presentation showed the Experiments tab the person no longer saw (drive27). Attention's map now, and Ctrl+E
    exports attention too; raised again, Experiments is the panel last looked at once more."""
    with window_at_1366(tmp_path, monkeypatch) as window:
        experiments, embeddings = window.docks["experiments"], window.docks["embeddings"]
        assert experiments in window.tabifiedDockWidgets(embeddings), "the layout tabs them together"
        experiments.raise_()
        settle(0.2)
        experiments.widget().setFocus()
        settle(0.1)
        embeddings.raise_()
        model_box = window.findChild(QComboBox, "model_picker")
        model_box.setFocus()
        settle(0.2)
        assert QApplication.focusWidget() is model_box
        assert not in_sight(experiments) and in_sight(embeddings)
        assert window.menus.current_panel.dock() is window.docks["attention"]
        toggle_presentation(window)
        assert window.dock_shares.maximised[0] is window.docks["attention"], shown(window)
        toggle_presentation(window)
        experiments.raise_()
        settle(0.2)
        toggle_presentation(window)
        assert window.dock_shares.maximised[0] is experiments, shown(window)
        toggle_presentation(window)
