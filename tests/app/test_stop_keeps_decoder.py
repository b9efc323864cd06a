"""After Stop, once the model thread is idle, its decoder holds exactly the trace the window shows.

A run Stop cancelled may already have replaced the decoder's trace (its prefill ended before its trace
reached the window) or emptied it (stopped between layers). The window keeps the trace before; the decoder
must hold that same trace again, or a later Step (or a panel's job lent the decoder) works on another text
than the one on screen. Each moment is held with threading events, as in test_journey_stop, rather than
left to timing; the second case presses Stop again while the give-back still waits behind a panel's job.
"""
from __future__ import annotations

import threading

import pytest
from PySide6.QtCore import Qt

from tests.app.journey import BUNDLED, journey_in_a_window
from tests.app.screen_fit import SCREENS

pytestmark = pytest.mark.usefixtures("store_home")  # the store in the test's folder

WAIT_S = 30


def _decoder_trace(window):
    return window.worker._loop._state.decoder.trace          # safe to read: the worker is idle


def _assert_decoder_holds(window, shown, when: str) -> None:
    held = _decoder_trace(window)
    assert held.token_ids.tolist() == shown.token_ids.tolist(), f"{when}: the decoder holds another trace"
    assert held.n_steps == shown.n_steps, f"{when}: the decoder holds {held.n_steps} steps, {shown.n_steps} shown"


def _stop_after_the_prefill_sent(window, edited: str, again: bool) -> None:
    """Run `edited`, press Stop once the model thread has sent its trace (not yet received); with `again`,
    a panel's job holds the thread while Stop is pressed a second time, the give-back queued behind it."""
    sent, gate = threading.Event(), threading.Event()

    def on_trace(trace, _seq) -> None:
        if trace.steps:
            sent.set()
    emitter = window.worker._emitter
    emitter.trace_ready.connect(on_trace, Qt.ConnectionType.DirectConnection)
    try:
        window.prompt.set_text(edited)
        window.actions.run.trigger()
        assert sent.wait(WAIT_S), "the prefill never sent its trace"
        if again:
            window.session.requests.model_job_requested.emit(lambda loaded, cancelled: gate.wait(WAIT_S))
        window.actions.stop.trigger()
        if again:
            window.actions.stop.trigger()
    finally:
        gate.set()
        emitter.trace_ready.disconnect(on_trace)


@pytest.mark.parametrize("again", [False, True], ids=["one Stop", "Stop during the give-back"])
def test_stop_during_a_run_leaves_the_decoder_on_the_trace_shown(qtbot, tmp_path, monkeypatch, again):
    with journey_in_a_window(qtbot, tmp_path, monkeypatch, SCREENS["1366x768"]) as journey:
        window = journey.window
        journey.open(BUNDLED / "shakespeare-gqa", "To be, or not")
        journey.act("Step", window.actions.step.trigger)
        shown_text, before = window.prompt.text, window.session.trace
        assert before.n_steps == 2
        journey.act("Stop", lambda: _stop_after_the_prefill_sent(window, "A horse, a horse", again))
        kept = window.session.trace
        assert kept.token_ids.tolist() == before.token_ids.tolist() and kept.n_steps == before.n_steps, \
            "Stop did not keep the trace shown before"
        # After a second Stop the give-back may arrive as its own (equal) trace object, redrawn once.
        assert again or kept is before, "one Stop redrew the trace it kept"
        _assert_decoder_holds(window, before, "idle after Stop")

        window.prompt.set_text(shown_text)        # Step continues the kept trace from its own last choice
        journey.act("Step after Stop", window.actions.step.trigger)
        after = window.session.trace
        assert after.n_steps == before.n_steps + 1
        assert after.token_ids[:before.n_tokens].tolist() == before.token_ids.tolist()
        assert after.steps[-1].token_ids.tolist() == [before.steps[-1].chosen_id]
        _assert_decoder_holds(window, after, "idle after the Step")
