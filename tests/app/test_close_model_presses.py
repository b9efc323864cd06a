"""Run, Step, Back and Play with no model open (at launch, and after File ▸ Close Model): each is off, its
tooltip says to open a model first, and its shortcut does nothing, least of all a modal box.

Seen driving the app: after Close Model the four stayed enabled, and Ctrl+Enter or Space popped "No model is
open yet" in a modal box."""
from __future__ import annotations

import transformers  # noqa: F401  (the tiny model is written with it; missing, the run fails, never skips)
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest

from explorer.app.thread.worker import ModelWorker
from tests.app.shared_window import make_window
from tests.app.tiny_model import make_tiny_llama
from tests.app.window_helpers import idle, opened

SHORTCUTS = {"run": (Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier),
             "step": (Qt.Key.Key_Space, Qt.KeyboardModifier.NoModifier),
             "back": (Qt.Key.Key_Backspace, Qt.KeyboardModifier.NoModifier),
             "play": (Qt.Key.Key_Space, Qt.KeyboardModifier.ControlModifier)}


def presses(window) -> dict:
    return {name: getattr(window.actions, name) for name in SHORTCUTS}


def press_every_shortcut(qtbot, window) -> None:
    """Each shortcut typed where no text field takes the key (the toolbar), as a person would after a click."""
    bar = window.decoding_bar
    bar.setFocus()
    qtbot.waitUntil(bar.hasFocus, timeout=5000)
    for key, modifiers in SHORTCUTS.values():
        QTest.keyClick(bar, key, modifiers)
        qtbot.wait(20)


def assert_off_for_no_model(window) -> None:
    for name, action in presses(window).items():
        assert not action.isEnabled(), f"{name} is on with no model open"
        assert "open a model first" in action.toolTip().lower(), (name, action.toolTip())
        assert not action.isChecked()


def test_the_presses_are_off_with_no_model_and_their_shortcuts_ask_nothing(qtbot, tmp_path, dialogs):
    folder = make_tiny_llama(tmp_path / "tiny")
    window = make_window(qtbot, tmp_path, worker=ModelWorker())
    qtbot.waitExposed(window)
    window.activateWindow()
    assert_off_for_no_model(window)                          # at launch: nothing open yet
    press_every_shortcut(qtbot, window)
    assert dialogs["warnings"] == [] and window.controller.loading is None

    opened(qtbot, window, folder)
    on = presses(window)
    assert all(action.isEnabled() for action in on.values()), {n: a.toolTip() for n, a in on.items()}
    assert not any("open a model" in action.toolTip().lower() for action in on.values())

    window.actions.play.trigger()                            # playing when the model closes: it stops, too
    window.menus.close_model_action.trigger()
    idle(qtbot, window)
    assert not window.controller.playing
    assert_off_for_no_model(window)
    press_every_shortcut(qtbot, window)
    idle(qtbot, window)
    assert dialogs["warnings"] == [], dialogs["warnings"]    # no modal box, and nothing was asked of the thread
    assert window.session.trace is None

    opened(qtbot, window, folder)                            # a model again: the presses are back
    assert all(action.isEnabled() for action in presses(window).values())
    step_before = window.session.trace.n_steps
    window.actions.step.trigger()
    idle(qtbot, window, lambda: window.session.trace.n_steps == step_before + 1)
    window.close()


def test_a_press_while_the_first_model_loads_waits_for_it(qtbot, tmp_path, dialogs):
    """A model on its way counts as open: Run pressed while the first model loads runs once it is ready."""
    folder = make_tiny_llama(tmp_path / "tiny")
    window = make_window(qtbot, tmp_path, worker=ModelWorker())
    window.prompt.set_text("To be, or not")
    window.open_model(str(folder))
    assert window.controller.loading is not None and window.actions.run.isEnabled()
    window.actions.run.trigger()
    idle(qtbot, window, lambda: window.session.trace is not None)
    assert dialogs["warnings"] == []
    window.close()
