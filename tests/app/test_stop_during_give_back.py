"""A second Stop while the decoder is being given the trace shown back never shows a half-rebuilt trace.

After Stop cancels a run, the model thread replays the trace kept on screen (test_stop_keeps_decoder). The
replay prefills the prompt, then steps towards the trace's last step. A second Stop cancels that replay and
asks the same give-back again. The window keeps showing the trace it kept: at no moment may a panel be
handed the replay's trace as far as it got (the prompt and fewer steps), which would draw fewer rows for a
moment and drop every panel's work. Each moment is held with threading events on the real model thread:
the replay waits inside its first decoding step until the second Stop has been pressed.
"""
from __future__ import annotations

import threading

import pytest
from PySide6.QtCore import Qt

from tests.app.journey import BUNDLED, journey_in_a_window
from tests.app.screen_fit import SCREENS

pytestmark = pytest.mark.usefixtures("store_home")  # the store in the test's folder

WAIT_S = 30


class _HeldStep:
    """The model thread's decoder waits in its next step (the give-back's first, once armed) until released."""

    def __init__(self, decoder) -> None:
        self.decoder, self.step = decoder, decoder.step
        self.armed, self.inside, self.go = False, threading.Event(), threading.Event()
        decoder.step = self._held

    def _held(self, *args, **kwargs):
        if self.armed and not self.inside.is_set():
            self.inside.set()
            self.go.wait(WAIT_S)
        return self.step(*args, **kwargs)

    def close(self) -> None:
        self.go.set()
        self.decoder.step = self.step


def test_a_second_stop_during_the_give_back_keeps_the_trace_whole(qtbot, tmp_path, monkeypatch):
    with journey_in_a_window(qtbot, tmp_path, monkeypatch, SCREENS["1366x768"]) as journey:
        window = journey.window
        journey.open(BUNDLED / "shakespeare-gqa", "To be, or not")
        for press in range(3):
            journey.act(f"Step {press + 1}", window.actions.step.trigger)
        kept = window.session.trace
        assert kept.n_steps == 4, "the give-back must have decoding steps to replay"
        sent, seen, held = threading.Event(), [], None
        emitter = window.worker._emitter
        emitter.trace_ready.connect(lambda trace, _seq: trace.steps and sent.set(), Qt.ConnectionType.DirectConnection)
        try:
            window.prompt.set_text("A horse, a horse")
            window.actions.run.trigger()
            # Stopped once its prefill ended (its trace sent, not received), the run has the decoder: the give-back
            # replays the trace kept (stopped half way, the decoder keeps it, with nothing to replay)
            assert sent.wait(WAIT_S), "the run never sent its trace"
            held = _HeldStep(window.worker._loop._state.decoder)
            held.armed = True
            window.actions.stop.trigger()                     # the first Stop: the give-back is queued
            assert held.inside.wait(WAIT_S), "the give-back never reached its decoding steps"
            window.session.trace_changed.connect(seen.append)
            window.actions.stop.trigger()                     # the second, while the give-back is half way
        finally:
            if held is not None:
                held.close()
        journey.idle("the second Stop")
        window.session.trace_changed.disconnect(seen.append)
        short = [(0, 0) if trace is None else (trace.n_tokens, trace.n_steps) for trace in seen
                 if trace is None or trace.n_tokens < kept.n_tokens]
        assert not short, (f"after the second Stop the panels were shown {short} (tokens, steps) "
                           f"while the trace kept has {kept.n_tokens} tokens in {kept.n_steps} steps")
        shown = window.session.trace
        assert shown.token_ids.tolist() == kept.token_ids.tolist() and shown.n_steps == kept.n_steps
        held_trace = window.worker._loop._state.decoder.trace           # safe to read: the worker is idle
        assert held_trace.token_ids.tolist() == kept.token_ids.tolist() and held_trace.n_steps == kept.n_steps
