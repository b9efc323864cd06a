"""Minor items of a real-window drive (issue 22): Learn's status line follows the model at every switch, close and
failed load; View lists Learn beside the other docks, checked while it is open; File ▸ Close Model leaves the focus
in the prompt editor, where Space types a space and Ctrl+Enter runs nothing (the Model box's list stayed shut)."""
from __future__ import annotations

import pyqtgraph as pg
import pytest
import transformers  # noqa: F401  (the tiny model is written with it; missing, the run fails, never skips)
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from explorer.app.window.learn_placement import open_learn
from tests.app.tiny_model import make_tiny_llama
from tests.app.window_helpers import PROMPT, idle, opened

pytestmark = pytest.mark.usefixtures("store_home")    # the store in the test's folder


def test_learns_status_follows_the_model_at_every_switch_close_and_failed_load(qtbot, window, tiny, tmp_path):
    panel = open_learn(window)
    opened(qtbot, window, tiny)
    assert tiny.name in panel.status.text(), panel.status.text()         # the folder names the model
    other = make_tiny_llama(tmp_path / "other-llama")
    opened(qtbot, window, other)
    said = panel.status.text()
    assert "other-llama" in said and tiny.name not in said, said        # a switch: the model now open

    window.menus.close_model_action.trigger()
    idle(qtbot, window, lambda: window.controller.reference is None)
    assert "No model is open" in panel.status.text()
    window.open_model(str(tmp_path / "no-such-model"))                   # a failed load keeps no model
    idle(qtbot, window)
    assert window.controller.reference is None and "No model is open" in panel.status.text()

    opened(qtbot, window, tiny)                                         # open again: no longer "No model is open"
    said = panel.status.text()
    assert "No model is open" not in said and tiny.name in said, said


def test_learn_made_after_close_model_says_no_model_is_open(qtbot, window, tiny):
    opened(qtbot, window, tiny)
    window.menus.close_model_action.trigger()
    idle(qtbot, window, lambda: window.controller.reference is None)
    panel = open_learn(window)                                          # first made now, with no model open
    assert "No model is open" in panel.status.text(), panel.status.text()


def view_entry(window, text: str):
    return next(a for a in window.menus.view.actions() if a.text().replace("&", "") == text)


def test_view_lists_learn_and_opens_and_closes_it_in_step_with_the_dock(qtbot, window):
    entry = view_entry(window, "Learn")
    assert entry.isCheckable() and not entry.isChecked()
    entry.trigger()                                                     # opened as Help ▸ Learn opens it
    dock = window.learn_dock
    qtbot.waitUntil(dock.isVisible)
    assert entry.isChecked()
    assert window.dockWidgetArea(dock) == Qt.DockWidgetArea.RightDockWidgetArea
    attention = window.docks["attention"]
    assert dock.geometry().left() > attention.geometry().right() or dock in window.tabifiedDockWidgets(attention)
    entry.trigger()
    assert dock.isHidden() and not entry.isChecked()

    help_learn = next(a for a in window.menus.help.actions() if a.text().replace("&", "").startswith("Learn"))
    help_learn.trigger()
    assert dock.isVisible() and entry.isChecked()
    dock.close()                                                        # its own close button
    window.menus.view.aboutToShow.emit()
    assert not entry.isChecked()
    dock.toggleViewAction().trigger()                                   # and back, by its own toggle
    assert dock.isVisible() and entry.isChecked()


def test_after_close_model_space_types_into_the_prompt_and_ctrl_enter_runs_nothing(qtbot, window, tiny):
    opened(qtbot, window, tiny)
    window.activateWindow()
    plot = window.docks["attention"].widget().findChildren(pg.GraphicsView)[0]
    plot.setFocus()                                                     # the map held the focus (a click on it)
    qtbot.waitUntil(lambda: QApplication.focusWidget() is plot)
    window.menus.close_model_action.trigger()                           # File ▸ Close Model, from the menu
    idle(qtbot, window, lambda: window.controller.reference is None)
    focus = QApplication.focusWidget()
    assert focus is window.prompt, focus
    qtbot.keyClick(focus, Qt.Key.Key_Space)
    typed = window.prompt.toPlainText()
    assert len(typed) == len(PROMPT) + 1 and typed.replace(" ", "") == PROMPT.replace(" ", "")   # a space typed
    assert not window.model_bar.models.view().isVisible()              # the Model box's list stayed shut
    qtbot.keyClick(focus, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
    idle(qtbot, window)
    assert window.session.trace is None and window.controller.reference is None


def test_view_brings_forward_a_panel_behind_a_tab_and_closes_one_in_sight(qtbot, window):
    """View ▸ <panel> on a panel open behind another tab closed it (Qt's own toggle), and chosen again brought it
    back still behind (drive27). It brings the panel forward now, and closes it once it is in sight."""
    from explorer.app.window.dock_shares import in_sight

    window.show()
    embeddings, mask = window.docks["embeddings"], window.docks["mask"]
    assert mask in window.tabifiedDockWidgets(embeddings), "the default layout tabs them together"
    embeddings.raise_()
    qtbot.waitUntil(lambda: in_sight(embeddings) and not in_sight(mask))
    entry = view_entry(window, mask.windowTitle())
    assert entry.isChecked()
    entry.trigger()
    qtbot.waitUntil(lambda: in_sight(mask))
    assert entry.isChecked() and not mask.isHidden()
    entry.trigger()                                                     # in sight now: closed
    assert mask.isHidden() and not entry.isChecked()
    embeddings.raise_()                                                 # another tab of its group in front
    qtbot.waitUntil(lambda: in_sight(embeddings))
    entry.trigger()                                                     # and opened again, in sight
    qtbot.waitUntil(lambda: in_sight(mask))
    assert entry.isChecked()
    mask.close()                                                        # its own close button: the entry follows
    assert not entry.isChecked()
