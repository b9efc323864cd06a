"""File ▸ Close Model (Ctrl+W): the model's jobs stop, the model thread lets the model go, and every panel
shows its explicit "no model" state, with nothing of the model or its run kept on screen; the status bar
says no model, and opening a model again works as before."""
from __future__ import annotations

import threading
import time

import transformers  # noqa: F401  (the tiny model is written with it; missing, the run fails, never skips)
from PySide6.QtWidgets import QApplication

from explorer.app.panels.base import Panel
from explorer.app.state.session import NO_MODEL
from explorer.app.thread.worker import ModelWorker
from tests.app.shared_window import make_window
from tests.app.tiny_model import make_tiny_llama
from tests.app.window_helpers import idle, opened


def every_panel(qtbot, window) -> list[Panel]:
    """Each dock shown and raised in turn, so each panel is made (once it is in sight: PanelDock builds a panel
    when it is exposed, not when a tab merely passes through the front) and draws what it holds."""
    for dock in window.docks.values():
        dock.show()
        dock.raise_()
        qtbot.waitUntil(lambda dock=dock: getattr(dock, "built", True), timeout=10000)
    return window.findChildren(Panel)


def shown_states(qtbot, window) -> dict[str, tuple]:
    states = {}
    for name, dock in window.docks.items():
        dock.raise_()
        for panel in dock.findChildren(Panel):
            panel.refresh()
            states[name] = panel.view_state()
    return states


def test_close_model_empties_every_panel_and_a_model_opens_again(qtbot, tmp_path):
    folder = make_tiny_llama(tmp_path / "tiny")
    window = make_window(qtbot, tmp_path, worker=ModelWorker())
    opened(qtbot, window, folder)
    every_panel(qtbot, window)
    before = shown_states(qtbot, window)
    assert before and all(state[0] == "trace" for state in before.values() if state[0] != "empty"), before

    started, ended = threading.Event(), threading.Event()

    def job(loaded, cancelled):                     # a panel's work on the model thread, until it is stopped
        started.set()
        while not cancelled():
            time.sleep(0.001)
        ended.set()

    window.session.requests.model_job_requested.emit(job)
    qtbot.waitUntil(started.is_set, timeout=60000)
    close = window.menus.close_model_action
    assert close.shortcut().toString() == "Ctrl+W"
    close.trigger()
    qtbot.waitUntil(ended.is_set, timeout=10000)    # the model's job was stopped
    idle(qtbot, window)
    after = shown_states(qtbot, window)
    assert window.session.model is None and window.session.trace is None and window.session.tokens is None
    kept = {name: state for name, state in after.items()      # the model map says it in words of its own
            if name != "learn" and (state[0] != "empty" or not state[1].startswith(NO_MODEL.split(":")[0]))}
    assert not kept, f"panels that do not say there is no model: {kept}"
    assert window.status.fields["model"].text() == "no model"
    assert window.controller.reference is None and window.worker._loop._state.loaded is None   # let go

    opened(qtbot, window, folder)
    again = shown_states(qtbot, window)
    assert window.session.model is not None and window.session.trace is not None
    assert not any(state == ("empty", NO_MODEL) for state in again.values()), again
    window.close()


def test_back_to_my_session_without_a_model_of_ones_own_closes_the_tours_model(qtbot, tmp_path):
    from explorer.app.window.learn_placement import open_learn

    window = make_window(qtbot, tmp_path, worker=ModelWorker())
    window.prompt.set_text("my own words")
    panel = open_learn(window)
    with qtbot.waitSignal(panel.ensure_tour().reached, timeout=180_000):
        panel.show_button.click()                   # the tour opens a model of its own
    idle(qtbot, window)
    assert window.session.model is not None and panel.own_button.isEnabled()
    panel.own_button.click()
    idle(qtbot, window)
    assert window.controller.reference is None and window.session.model is None
    assert window.prompt.text == "my own words" and window.session.experiments == ()
    assert window.status.fields["model"].text() == "no model"
    states = shown_states(qtbot, window)
    assert all(state[0] == "empty" for name, state in states.items() if name != "learn"), states
    window.close()

def test_typing_after_close_model_keeps_every_panel_saying_there_is_no_model(qtbot, tmp_path):
    """Drive 18: after File ▸ Close Model the focus is in the prompt (so Space types there), and the text typed
    made every panel say "type a prompt and press Run" with Run off and no model open. Expectation: the
    panels keep saying why nothing is shown, whatever is typed, until a model is open."""
    folder = make_tiny_llama(tmp_path / "tiny")
    window = make_window(qtbot, tmp_path, worker=ModelWorker())
    opened(qtbot, window, folder)
    every_panel(qtbot, window)
    window.menus.close_model_action.trigger()
    idle(qtbot, window)
    window.prompt.setFocus()
    qtbot.keyClicks(QApplication.focusWidget(), " more words")
    window.prompt.settle()                                  # what its debounce does after a pause
    idle(qtbot, window)
    after = shown_states(qtbot, window)
    forgot = {name: state for name, state in after.items()
              if name not in ("learn", "model_map") and state != ("empty", NO_MODEL)}
    assert not forgot, f"panels that no longer say there is no model: {forgot}"
    window.close()
