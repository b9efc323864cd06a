"""A run stopped half way gives the decoder back the trace shown before any panel's read of it runs.

An experiment turned on redoes the run shown under it (the model thread prefills the prompt again). Stop
during that prefill leaves the decoder empty while the window still shows its trace. A panel that asks the
decoder something right after Stop (Next token's candidates at a prompt position) must be answered from the
trace shown, given back first: not failed with "Nothing has been run yet", and not dropped unanswered. The
model thread is held at the redo's first layer, with threading events, until Stop and the ask are made.
"""
from __future__ import annotations

import threading

import pytest
from PySide6.QtCore import Qt

from explorer.core.intervention import HeadAblation, Intervention
from tests.app.journey import BUNDLED, journey_in_a_window
from tests.app.screen_fit import SCREENS

pytestmark = pytest.mark.usefixtures("store_home")  # the store in the test's folder

WAIT_S = 30


def test_a_read_asked_after_stopping_a_redo_reads_the_trace_shown(qtbot, tmp_path, monkeypatch):
    with journey_in_a_window(qtbot, tmp_path, monkeypatch, SCREENS["1366x768"]) as journey:
        window = journey.window
        journey.open(BUNDLED / "shakespeare-gqa", "To be, or not")
        journey.act("Step", window.actions.step.trigger)
        kept = window.session.trace
        answers, failures, seen = [], [], []
        window.session.requests.candidates_ready.connect(answers.append)
        window.worker.failed.connect(failures.append)
        inside, go = threading.Event(), threading.Event()

        def on_layer(_fraction, _text) -> None:
            if not inside.is_set():
                inside.set()
                go.wait(WAIT_S)
        emitter = window.worker._emitter
        emitter.run_progress.connect(on_layer, Qt.ConnectionType.DirectConnection)
        try:
            window.session.add_experiment(Intervention(ablations=(HeadAblation(0, 0),)))   # the run is redone
            assert inside.wait(WAIT_S), "the redo under the experiment never reached its first layer"
            window.session.trace_changed.connect(seen.append)
            window.actions.stop.trigger()
            window.session.requests.candidates_requested.emit(2)
        finally:
            go.set()
            emitter.run_progress.disconnect(on_layer)
        journey.idle("Stop during the redo")
        window.session.trace_changed.disconnect(seen.append)
        assert not failures, f"a read after Stop failed: {failures}"
        assert [answer["position"] for answer in answers] == [2], "the candidates asked after Stop never came"
        assert answers[0]["token"] == int(kept.token_ids[2]), "the candidates were read from another trace"
        assert all(trace is not None and trace.n_tokens == kept.n_tokens for trace in seen), \
            "a panel was shown an emptied trace after Stop"
        held = window.worker._loop._state.decoder.trace                 # safe to read: the worker is idle
        assert held.token_ids.tolist() == kept.token_ids.tolist() and held.n_steps == kept.n_steps
