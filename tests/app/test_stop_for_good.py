"""A Stop (Esc) stops a panel's long job for good, through the real window and its model thread: the head atlas,
Why this token, the residual stream, Show the work, Experiments and the model map each say they stopped, and
neither their next redraw nor a selection echo asks the model thread (or, for Show the work's long trace, a thread
of its own) the same again; a fresh request by the person (Compute, Resume) does. (Before, the residual stream and
Show the work asked the job a Stop had cancelled again at their next redraw, and so did the model map its model's
config.)"""
from __future__ import annotations

import threading

import pytest
import transformers  # noqa: F401  (the tiny model is written with it; missing, the run fails, never skips)
from PySide6.QtCore import Qt

from explorer.app.panels import derivation, model_map
from explorer.core.intervention import HeadAblation, Intervention
from tests.app.window_helpers import idle, new_window, opened

pytestmark = pytest.mark.usefixtures("store_home")  # the store in the test's folder

PANELS = ("residual", "attribution", "atlas", "derivation", "experiments")


@pytest.fixture
def window(qtbot, tmp_path, tiny, dialogs):
    window = new_window(qtbot, tmp_path)
    window.resize(1400, 900)
    opened(qtbot, window, tiny)
    yield window
    window.close()


@pytest.fixture
def submitted(window):
    """Every job handed to the model thread from now on (the panels' and the test's own)."""
    jobs = []
    window.session.requests.model_job_requested.connect(jobs.append)
    return jobs


def hold_the_model_thread(window) -> threading.Event:
    """The model thread runs a job that waits for the event returned: the panels' jobs queue behind it."""
    release = threading.Event()
    window.session.requests.model_job_requested.emit(lambda loaded, cancelled: release.wait(30))
    return release


def raise_panel(qtbot, window, name: str):
    """The panel's dock raised: its first drawing asks its job (in a turn of its own)."""
    panel = window.docks[name].widget()
    assert not panel.is_shown(), "asked nothing yet"
    window.docks[name].show()
    window.docks[name].raise_()
    qtbot.waitUntil(lambda: any(asker.busy for asker in panel.askers), timeout=30000)
    return panel


def echo(panel) -> None:
    """What used to ask again: the panel redrawn, and the selection it has heard again."""
    panel.refresh()
    panel.session.selection_changed.emit(panel.session.selection)


def stop_then_echo(qtbot, window, panel, release: threading.Event) -> None:
    """Stop, the job held on the model thread (or the panel's own) let go, and the panel redrawn and its selection
    heard again, twice."""
    window.actions.stop.trigger()
    release.set()
    idle(qtbot, window)
    for _ in range(2):
        echo(panel)
        idle(qtbot, window)
    qtbot.wait(50)                                       # a late answer, or a job asked again, would arrive here


def says_stopped(panel) -> str:
    if panel.object_name == "atlas":                     # its caption, beside its own Resume
        return panel.caption.text() if "Stopped" in panel.caption.text() else ""
    return panel.stopped_label.text() if panel.stopped_label.isVisible() else ""


def ask_again(qtbot, panel) -> None:
    button = panel.cancel_button if panel.object_name == "atlas" else panel.compute_button
    assert button.isVisible()
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)


def answered(panel) -> bool:
    return {"residual": lambda: panel.stream is not None,
            "attribution": lambda: panel.result is not None,
            "atlas": lambda: panel.scores is not None,
            "derivation": lambda: bool(panel.weights),
            "experiments": lambda: panel.result is not None,
            "model_map": lambda: panel.config is not None}[panel.object_name]()


@pytest.mark.parametrize("name", PANELS)
def test_a_stopped_job_is_not_asked_again_until_the_person_asks(qtbot, window, submitted, name):
    if name == "experiments":                            # it compares only with an experiment on
        window.session.add_experiment(Intervention(ablations=(HeadAblation(0, 0),)))
        idle(qtbot, window)
        submitted.clear()
    release = hold_the_model_thread(window)
    panel = raise_panel(qtbot, window, name)
    asked = len(submitted)
    assert asked == 2                                    # the test's job, and the panel's behind it
    stop_then_echo(qtbot, window, panel, release)        # the model thread drops the panel's job
    assert len(submitted) == asked and not any(asker.busy for asker in panel.askers)      # nothing asked again
    assert "Stopped" in says_stopped(panel) and not answered(panel)
    assert panel.drawn().trace_id == window.session.trace_id     # the trace stays drawn

    ask_again(qtbot, panel)                              # the person asks
    idle(qtbot, window, lambda: answered(panel))
    assert len(submitted) > asked and says_stopped(panel) == ""


@pytest.mark.parametrize("name", ["residual", "attribution"])
def test_after_a_stop_another_position_is_asked_at_once(qtbot, window, submitted, name):
    release = hold_the_model_thread(window)
    panel = raise_panel(qtbot, window, name)
    window.actions.stop.trigger()
    release.set()
    idle(qtbot, window)
    asked = len(submitted)
    window.session.select(token=1)                       # a selection the person made
    idle(qtbot, window, lambda: answered(panel))
    assert len(submitted) == asked + 1 and says_stopped(panel) == ""
    assert (panel.stream if name == "residual" else panel.result).position == 1


def test_show_the_work_s_long_cell_stopped_is_not_derived_again_until_the_person_asks(qtbot, window,
                                                                                       monkeypatch):
    """A long trace's cell is derived on a thread of its own: a Stop drops it, and neither a redraw nor the
    selection heard again derives it again; Compute does."""
    gate, derived, real = threading.Event(), [], derivation.derive

    def derive(asked):
        derived.append(asked.key)
        gate.wait(30)
        return real(asked)

    monkeypatch.setattr(derivation, "is_long", lambda *args, **kwargs: True)      # every trace derived off the GUI
    monkeypatch.setattr(derivation, "derive", derive)
    panel = window.docks["derivation"].widget()
    window.docks["derivation"].show()
    window.docks["derivation"].raise_()
    idle(qtbot, window, lambda: bool(panel.weights) and panel.job.running)   # the weights came; the cell is derived
    asked = len(derived)
    stop_then_echo(qtbot, window, panel, gate)
    assert len(derived) == asked and not panel.job.running and panel.derived is None
    assert "Stopped" in says_stopped(panel) and "deriving the cell" in says_stopped(panel)

    ask_again(qtbot, panel)
    qtbot.waitUntil(lambda: panel.derived is not None, timeout=30000)
    assert len(derived) == asked + 1 and says_stopped(panel) == ""


def test_the_model_map_s_config_stopped_is_not_asked_again_until_the_person_asks(qtbot, window, tiny, monkeypatch):
    """The map asks the model thread for its model's config once per model (at a load, shown or not): a Stop while
    it is asked holds, the map drawn from the model's info alone says so, and Compute asks it."""
    gate, real, read = threading.Event(), model_map.config_job, []

    def config_job(loaded, progress, cancel):
        read.append(loaded)
        gate.wait(30)
        return real(loaded, progress, cancel)

    monkeypatch.setattr(model_map, "config_job", config_job)
    panel = window.docks["model_map"].widget()
    window.docks["model_map"].show()
    window.docks["model_map"].raise_()
    window.open_model(str(tiny))                         # the model again: a new model, its config asked
    qtbot.waitUntil(lambda: len(read) == 1, timeout=30000)    # (the load ends with its run, queued behind)
    assert panel.config is None
    stop_then_echo(qtbot, window, panel, gate)
    assert len(read) == 1 and not panel.asker.busy and not answered(panel)
    assert "Stopped" in says_stopped(panel) and "config" in says_stopped(panel)
    assert panel.graph is not None and panel.items              # drawn from the model's info meanwhile

    ask_again(qtbot, panel)
    idle(qtbot, window, lambda: answered(panel))
    assert len(read) == 2 and says_stopped(panel) == ""
