"""One Stop gives the decoder the trace shown back in one replay, however many asks for it meet on the way.

After Stop, the model thread replays the trace kept on screen (test_stop_keeps_decoder). A panel that asks
the decoder something meanwhile (Next token's candidates at a prompt position) asks for that same replay
first. That second ask must join the replay under way, not cancel it: a cancelled replay hands back an
emptied trace, which read as another cancelled run asked for the trace shown once more, whose replay
cancelled the one running, and so on; on SmolLM2 the window stayed busy for two minutes. Likewise a
replay or a run cancelled by a newer run must not bring back the trace before over that run.

Each moment is held with threading events on the real model thread, as in test_journey_stop: the
give-back (or a run) waits at its first layer until the competing ask has been made.
"""
from __future__ import annotations

import threading

import pytest
from PySide6.QtCore import Qt

from explorer.app.thread.request_queue import RequestQueue
from explorer.app.thread.requests import Prefill, Replay, Step
from tests.app.journey import BUNDLED, journey_in_a_window
from tests.app.screen_fit import SCREENS

pytestmark = pytest.mark.usefixtures("store_home")  # the store in the test's folder

WAIT_S = 30
TOO_MANY = 6                 # replay passes after which the chain is taken as endless


class _ModelThreadWatch:
    """What the model thread does, seen on it: each pass (replay or prefill) started, the empty traces the
    window is handed, and the first pass whose text holds `hold` waits at its first layer until released."""

    def __init__(self, window, hold: str) -> None:
        self.window, self.hold = window, hold
        self.passes: list[str] = []
        self.empty: list[int] = []
        self.inside, self.go = threading.Event(), threading.Event()
        window.worker._emitter.run_progress.connect(self._on_layer, Qt.ConnectionType.DirectConnection)
        window.worker.trace_ready.connect(self._on_trace)

    def _on_layer(self, _fraction, text: str) -> None:
        if ": layer 1 of" not in text:
            return
        self.passes.append(text)
        if self.hold in text and not self.inside.is_set():
            self.inside.set()
            self.go.wait(WAIT_S)

    def _on_trace(self, trace) -> None:
        if not trace.steps:
            self.empty.append(trace.n_tokens)

    def replays(self) -> int:
        return sum("Replaying" in text for text in self.passes)

    def reached(self) -> None:
        assert self.inside.wait(WAIT_S), f"no pass {self.hold!r} reached its first layer"

    def settle(self, qtbot) -> None:
        """Release the held pass and wait until the model thread is idle (or plainly in a chain)."""
        self.go.set()
        qtbot.waitUntil(lambda: not self.window.worker.busy or self.replays() > TOO_MANY, timeout=WAIT_S * 1000)
        qtbot.waitUntil(lambda: not self.window.worker.busy, timeout=WAIT_S * 1000)

    def close(self) -> None:
        self.go.set()
        self.window.worker._emitter.run_progress.disconnect(self._on_layer)
        self.window.worker.trace_ready.disconnect(self._on_trace)


def _decoder_trace(window):
    return window.worker._loop._state.decoder.trace          # safe to read: the worker is idle


def _open_with_a_step(journey):
    window = journey.window
    journey.open(BUNDLED / "shakespeare-gqa", "To be, or not")
    journey.act("Step", window.actions.step.trigger)
    assert window.session.trace.n_steps == 2
    return window, window.prompt.text, window.session.trace


def _run_and_stop(window, text: str) -> None:
    """Run `text` and press Stop once its prefill has ended (its trace sent, not yet received): the decoder then
    holds the new run, and the give-back replays the trace shown. (A run stopped before its prefill ended leaves
    the decoder on the trace shown, with nothing to replay: test_cancel_keeps_run.)"""
    sent = threading.Event()

    def on_trace(trace, _seq) -> None:
        if trace.steps:
            sent.set()
    emitter = window.worker._emitter
    emitter.trace_ready.connect(on_trace, Qt.ConnectionType.DirectConnection)
    try:
        window.prompt.set_text(text)
        window.actions.run.trigger()
        assert sent.wait(WAIT_S), "the run never sent its trace"
        window.actions.stop.trigger()
    finally:
        emitter.trace_ready.disconnect(on_trace)


def test_an_ask_during_the_give_back_joins_it(qtbot, tmp_path, monkeypatch):
    """Run, Stop at once; while the give-back replays, the Next token panel asks for the candidates at a
    prompt position (through the decoder, after the same give-back): one replay pass, no empty trace, the
    answer comes, and the decoder holds the trace shown."""
    with journey_in_a_window(qtbot, tmp_path, monkeypatch, SCREENS["1366x768"]) as journey:
        window, shown_text, before = _open_with_a_step(journey)
        answers = []
        window.session.requests.candidates_ready.connect(lambda answer: answers.append(answer["position"]))
        watch = _ModelThreadWatch(window, hold="Replaying")
        try:
            _run_and_stop(window, shown_text + " again")
            watch.reached()
            window.session.requests.candidates_requested.emit(2)
            watch.settle(qtbot)
        finally:
            watch.close()
        journey.idle("the give-back")
        assert watch.replays() == 1, f"one Stop started {watch.replays()} replay passes: {watch.passes}"
        assert not watch.empty, f"{len(watch.empty)} empty traces were handed to the window after Stop"
        assert 2 in answers, "the candidates asked during the give-back never came"
        shown = window.session.trace
        assert shown is before, "the give-back redrew the trace it kept"
        held = _decoder_trace(window)
        assert held.token_ids.tolist() == before.token_ids.tolist() and held.n_steps == before.n_steps


@pytest.mark.parametrize("hold", ["Replaying", "Prefilling"], ids=["during the give-back", "during a run"])
def test_run_during_a_replay_or_a_run_is_not_undone(qtbot, tmp_path, monkeypatch, hold):
    """Run a new prompt while the give-back replays (or while another run prefills): the cancelled pass's
    emptied trace must not bring the trace before back over the new run, which is shown, current."""
    with journey_in_a_window(qtbot, tmp_path, monkeypatch, SCREENS["1366x768"]) as journey:
        window, shown_text, before = _open_with_a_step(journey)
        watch = _ModelThreadWatch(window, hold=hold)
        try:
            if hold == "Replaying":
                _run_and_stop(window, shown_text + " again")
            else:
                window.prompt.set_text(shown_text + " again")
                window.actions.run.trigger()
            watch.reached()
            window.prompt.set_text("A horse, a horse")
            window.actions.run.trigger()
            watch.settle(qtbot)
        finally:
            watch.close()
        journey.idle("the new run")
        expected = window.session.tokens.ids
        shown = window.session.trace
        assert shown.token_ids.tolist() == list(expected), "the run pressed last is not the trace shown"
        assert window.session.out_of_date is None, window.session.out_of_date
        assert watch.replays() <= 1, f"{watch.replays()} replay passes: {watch.passes}"
        assert _decoder_trace(window).token_ids.tolist() == list(expected)


# ----- the queue alone ---------------------------------------------------------------------------------
def _running(queue: RequestQueue, request):
    queue.push(request)
    return queue.take()


def test_an_equal_replay_joins_the_running_one():
    queue = RequestQueue()
    running = _running(queue, Replay(ids=(1, 2, 3), forced=((1, 7),), n_steps=3))
    queue.push(Step())
    queue.push(Replay(ids=(1, 2, 3), forced=((1, 7),), n_steps=3))
    assert not queue.is_cancelled(running), "an equal replay cancelled the running one"
    assert queue.pending() == [], "the step queued before the equal replay was kept (the replay sets the trace)"
    assert queue.finish(running) == queue.pushed(), "idle after the running replay"


@pytest.mark.parametrize("newer", [Replay(ids=(1, 2, 3), n_steps=2), Replay(ids=(1, 2)), Prefill(ids=(1, 2, 3))],
                         ids=["more steps", "another prompt", "a run"])
def test_another_replay_or_a_run_cancels_the_running_replay(newer):
    queue = RequestQueue()
    running = _running(queue, Replay(ids=(1, 2, 3)))
    queue.push(newer)
    assert queue.is_cancelled(running)
    assert [type(r) for r in queue.pending()] == [type(newer)]
    assert queue.starts_over(loads=False), "the newer request starts the trace over"


def test_a_cancelled_replay_is_not_joined():
    queue = RequestQueue()
    running = _running(queue, Replay(ids=(1, 2, 3)))
    queue.cancel()
    queue.push(Replay(ids=(1, 2, 3)))
    assert queue.is_cancelled(running)
    assert [type(r) for r in queue.pending()] == [Replay]
