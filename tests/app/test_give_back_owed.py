"""A give-back the GUI's own word makes needless is not run: opening a session sets the record dtype without a
redo (a new, empty decoder) and then queues the session's replay; the model thread used to give the emptied
decoder the trace shown back first whenever it finished the setting before the replay was queued (CI's
progress texts showed 'Replaying the prompt's 11 tokens', the shown trace's, before the session's replay).

The window tests hold the GUI right after the setting is queued until the model thread is idle, so the
setting has run before the session's replay is asked, as under load; the model thread's passes are counted
from its progress texts. The queue tests check the rule itself: the give-back owed waits for the next request
that reads the decoder, and a request that starts the trace over drops it.
"""
from __future__ import annotations

import threading

import pytest
from PySide6.QtCore import Qt

from explorer.app.thread.request_queue import RequestQueue
from explorer.app.thread.requests import (
    Load,
    ModelJob,
    Prefill,
    Replay,
    SetIntervention,
    SetRecording,
    SetSampling,
    Step,
    Sync,
)
from tests.app.journey import BUNDLED, journey_in_a_window
from tests.app.screen_fit import SCREENS

pytestmark = pytest.mark.usefixtures("store_home")  # the store in the test's folder

WAIT_S = 30
SHOWN = Replay(ids=(1, 2, 3), forced=((1, 7),), n_steps=3)


# ----- the queue's rule -----------------------------------------------------------------------------------------
def _owing(*queued) -> RequestQueue:
    """A queue whose running setting emptied the decoder and owes the give-back, with `queued` pushed after."""
    queue = RequestQueue()
    queue.push(SetRecording(dtype="float16", redo=False))
    running = queue.take()
    queue.give_back_unless_replaced(SHOWN)
    queue.finish(running)
    for request in queued:
        queue.push(request)
    return queue


def _taken(queue: RequestQueue) -> list:
    """What the model thread takes, in order (a Stop's Sync, which does nothing, left out)."""
    taken = []
    while queue.pending():
        taken.append(queue.take())
        queue.finish(taken[-1])
    return [request for request in taken if not isinstance(request, Sync)]


@pytest.mark.parametrize("replacing", [Replay(ids=(9, 8)), Prefill(ids=(9,)), Load(path="m")],
                         ids=["the session's replay", "a run", "a load"])
def test_a_request_that_starts_over_drops_the_owed_give_back(replacing):
    taken = _taken(_owing(ModelJob(job=None), replacing))       # a panel's job borrows the decoder queued before it
    kept = [] if isinstance(replacing, Load) else [ModelJob]      # a load drops the job queued
    assert [type(r) for r in taken] == [type(replacing), *kept]   # the person's request first (request_queue._priority)
    assert not any(getattr(r, "give_back", False) for r in taken)


@pytest.mark.parametrize("reading", [Step(), SetIntervention(intervention=None)], ids=["a step", "a redo"])
def test_a_request_that_reads_the_decoder_gets_the_give_back_first(reading):
    taken = _taken(_owing(SetSampling(sampling=None), ModelJob(job=None), reading))
    assert [type(r) for r in taken] == [SetSampling, Replay, type(reading), ModelJob]     # the panel's job last
    give_back = taken[1]
    assert give_back.give_back and (give_back.ids, give_back.forced, give_back.n_steps) == (
        SHOWN.ids, SHOWN.forced, SHOWN.n_steps)


def test_a_discarding_stop_drops_the_owed_give_back_and_a_plain_one_keeps_it():
    kept = _owing()
    kept.cancel()
    kept.push(Step())
    assert [type(r) for r in _taken(kept)] == [Replay, Step]
    dropped = _owing()
    dropped.cancel(discard=True)
    dropped.push(Step())
    assert [type(r) for r in _taken(dropped)] == [Step]


# ----- in the window, on the real model thread --------------------------------------------------------------
class _Passes:
    """Each prefill or replay the model thread starts, by its first layer's progress text (seen on that thread),
    and a hold: after the record dtype is queued, the GUI calls `holding` and waits until the model thread is
    idle."""

    def __init__(self, window, monkeypatch, holding=lambda: None) -> None:
        self.window, self.texts, self.idle = window, [], threading.Event()
        emitter = window.worker._emitter
        emitter.run_progress.connect(self._on_layer, Qt.ConnectionType.DirectConnection)
        emitter.state_changed.connect(self._on_state, Qt.ConnectionType.DirectConnection)
        set_recording = window.worker.set_recording

        def held(dtype, redo=True):
            self.idle.clear()
            set_recording(dtype, redo)
            holding()
            assert self.idle.wait(WAIT_S), "the model thread never went idle after the record dtype"
        monkeypatch.setattr(window.worker, "set_recording", held)

    def _on_layer(self, _fraction, text: str) -> None:
        if ": layer 1 of" in text:
            self.texts.append(text.split(":")[0])

    def _on_state(self, pushed: int) -> None:
        if pushed != -1:
            self.idle.set()

    def close(self) -> None:
        emitter = self.window.worker._emitter
        emitter.run_progress.disconnect(self._on_layer)
        emitter.state_changed.disconnect(self._on_state)


def _decoder_trace(window):
    return window.worker._loop._state.decoder.trace          # read once the worker is idle


@pytest.mark.parametrize("behind_a_job", [False, True], ids=["alone", "behind a panel's job"])
def test_opening_a_session_replays_only_the_session(qtbot, tmp_path, monkeypatch, behind_a_job):
    from explorer.views.session_state import SessionState, record_dtype_of

    with journey_in_a_window(qtbot, tmp_path, monkeypatch, SCREENS["1366x768"]) as journey:
        window = journey.window
        journey.open(BUNDLED / "shakespeare-gqa", "To be, or not")
        journey.act("Step", window.actions.step.trigger)
        saved = window.session.trace
        state = SessionState.of(window.controller.reference, window.prompt.text, window.sampling_bar.settings(),
                                saved)
        state = type(state)(**{**state.__dict__, "record_dtype": "float16"})
        window.prompt.set_text("A horse, a horse, my kingdom")
        journey.act("Run another prompt", window.actions.run.trigger)
        shown = window.session.trace
        assert shown.n_steps == 1 and shown.token_ids.tolist() != saved.token_ids.tolist()
        release = threading.Event()
        passes = _Passes(window, monkeypatch, holding=release.set)      # the job ends while the GUI holds
        try:
            if behind_a_job:                # a panel's job borrows the decoder as the session opens
                window.session.requests.model_job_requested.emit(lambda loaded, cancelled: release.wait(WAIT_S))
            journey.act("Open the session", lambda: window.restore_session(state))
        finally:
            release.set()
            passes.close()
        session_pass = f"Replaying the prompt's {len(saved.steps[0].token_ids)} tokens before decoding 1 token"
        assert passes.texts == [session_pass], "the shown trace was given back before the session's replay"
        decoder = _decoder_trace(window)
        assert decoder.token_ids.tolist() == saved.token_ids.tolist() and decoder.n_steps == saved.n_steps
        assert window.session.trace.token_ids.tolist() == saved.token_ids.tolist()
        assert record_dtype_of(decoder) == "float16"


def test_a_step_after_the_setting_still_gets_the_trace_shown_back(qtbot, tmp_path, monkeypatch):
    with journey_in_a_window(qtbot, tmp_path, monkeypatch, SCREENS["1366x768"]) as journey:
        window = journey.window
        journey.open(BUNDLED / "shakespeare-gqa", "A horse, a horse, my kingdom")
        shown = window.session.trace
        passes = _Passes(window, monkeypatch)
        try:
            journey.act("Record in float16, no run after", lambda: window.worker.set_recording("float16", False))
            journey.act("Step", window.actions.step.trigger)
        finally:
            passes.close()
        assert passes.texts == [f"Replaying the prompt's {shown.n_tokens} tokens"], "no give-back before the step"
        decoder = _decoder_trace(window)
        assert decoder.n_steps == shown.n_steps + 1
        assert decoder.token_ids[: shown.n_tokens].tolist() == shown.token_ids.tolist()
        assert window.session.trace.token_ids.tolist() == decoder.token_ids.tolist()
