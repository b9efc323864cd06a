"""Stop pressed while the model runs an edited prompt: the trace shown before stays, marked out of date.

A person who presses Stop because a run takes long keeps what they were looking at (Qt Creator's
cancelled build keeps the last results). Stop can land at three moments of the model thread's work, and
each is held there here rather than left to timing: before the thread has taken the prefill, in the
middle of the prefill (its cache already reset), and after the prefill ended but before its trace reached
the window. At each, the trace before stays on screen, every panel says it is out of date, and a Step on
the prompt of that trace continues it: the decoder is given it back, whatever the cancelled run left there.
"""
from __future__ import annotations

import threading

import pytest
from PySide6.QtCore import Qt

from explorer.app.state.freshness import EDITED
from tests.app.journey import BUNDLED, journey_in_a_window
from tests.app.screen_fit import SCREENS

pytestmark = pytest.mark.usefixtures("store_home")  # the store in the test's folder

WAIT_S = 30


def _held_before_the_prefill(window):
    """The model thread is busy with a panel's job until Stop has been pressed: the prefill is still queued."""
    gate = threading.Event()
    window.session.requests.model_job_requested.emit(lambda loaded, cancelled: gate.wait(WAIT_S))
    return (lambda: None), gate.set


def _held_in_the_prefill(window):
    """The model thread stops at the prefill's first layer report until Stop has been pressed."""
    inside, go = threading.Event(), threading.Event()

    def on_layer(_fraction, _text) -> None:
        if not inside.is_set():
            inside.set()
            go.wait(WAIT_S)
    window.worker._emitter.run_progress.connect(on_layer, Qt.ConnectionType.DirectConnection)

    def release() -> None:
        go.set()
        window.worker._emitter.run_progress.disconnect(on_layer)
    return (lambda: _wait(inside, "the prefill never reported a layer")), release


def _held_after_the_prefill(window):
    """Stop is pressed once the model thread has sent the new trace, before the window has received it."""
    sent = threading.Event()

    def on_trace(trace, _seq) -> None:
        if trace.steps:
            sent.set()
    window.worker._emitter.trace_ready.connect(on_trace, Qt.ConnectionType.DirectConnection)
    return (lambda: _wait(sent, "the prefill never sent its trace")), \
        (lambda: window.worker._emitter.trace_ready.disconnect(on_trace))


def _wait(event: threading.Event, why: str) -> None:
    assert event.wait(WAIT_S), why          # no Qt events are processed meanwhile: the trace waits in the queue


MOMENTS = {"before the prefill": _held_before_the_prefill, "in the prefill": _held_in_the_prefill,
           "after the prefill": _held_after_the_prefill}


@pytest.mark.parametrize("moment", MOMENTS)
def test_stop_during_a_run_of_an_edited_prompt_keeps_the_trace_before(qtbot, tmp_path, monkeypatch, moment):
    with journey_in_a_window(qtbot, tmp_path, monkeypatch, SCREENS["1366x768"]) as journey:
        window = journey.window
        journey.open(BUNDLED / "shakespeare-gqa", "To be, or not")
        for _ in range(2):                            # a second Stop, from the trace Step continued
            shown_text, before = window.prompt.text, window.session.trace
            reached, release = MOMENTS[moment](window)

            def run_and_stop():
                window.prompt.set_text(shown_text + " again")
                window.actions.run.trigger()
                reached()
                window.actions.stop.trigger()
                release()
            journey.act(f"Stop {moment}", run_and_stop)
            assert window.session.trace is before, f"Stop {moment} did not keep the trace shown before"
            assert window.session.out_of_date == EDITED, f"Stop {moment}: {window.session.out_of_date!r}"

            window.prompt.set_text(shown_text)        # back to the kept trace's prompt: Step continues it
            journey.act(f"Step after Stop {moment}", window.actions.step.trigger)
            after = window.session.trace
            assert after.n_steps == before.n_steps + 1, f"Step after Stop {moment} made {after.n_steps} steps"
            assert after.token_ids[:before.n_tokens].tolist() == before.token_ids.tolist(), moment
            assert after.steps[-1].token_ids.tolist() == [before.steps[-1].chosen_id], moment
            assert window.session.out_of_date is None
