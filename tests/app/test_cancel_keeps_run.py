"""Cancel in a run's progress dialog keeps the run before, with no pass of the prompt again.

The run before stays on every panel and in the model thread's decoder, which kept it while the new run
went (issue 22: a second dialog, "Replaying the prompt's 350 tokens", followed the Cancel and ran the whole
prompt again to give the decoder back what the window shows). The status line says what happened. The
model thread is held at the new run's first layer with threading events, as in test_stop_keeps_decoder,
so that the Cancel lands half way through the prefill whatever the machine's speed.
"""
from __future__ import annotations

import threading

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QPushButton

from tests.app.window_helpers import PROMPT, idle, opened, step

pytestmark = pytest.mark.usefixtures("store_home")  # the store in the test's folder

WAIT_S = 30
LONG_PROMPT = " ".join([PROMPT] * 4)    # within the tiny model's context, with room to step


def _cancel_half_way(qtbot, window) -> None:
    """Run the prompt again and press Cancel in its progress dialog while its first layers run."""
    reached, gate = threading.Event(), threading.Event()

    def hold(_fraction, text) -> None:              # on the model thread, inside the prefill's pass
        if text.startswith("Prefilling") and not reached.is_set():
            reached.set()
            gate.wait(WAIT_S)
    emitter = window.worker._emitter
    emitter.run_progress.connect(hold, Qt.ConnectionType.DirectConnection)
    try:
        window.actions.run.trigger()
        assert reached.wait(WAIT_S), "the run never reported a layer"
        progress = window.controller.run_progress
        qtbot.waitUntil(lambda: progress.dialog is not None, timeout=WAIT_S * 1000)
        progress.dialog.findChild(QPushButton).click()          # the dialog's Cancel, as a person presses it
    finally:
        gate.set()
        emitter.run_progress.disconnect(hold)


def test_cancel_keeps_the_run_before_without_running_the_prompt_again(qtbot, window, tiny):
    opened(qtbot, window, tiny, LONG_PROMPT)
    before = step(qtbot, window)
    reports = []
    window.worker.run_progress.connect(lambda _fraction, text: reports.append(text))
    _cancel_half_way(qtbot, window)
    cancelled_at = len(reports)
    idle(qtbot, window)
    qtbot.wait(200)                                  # a give-back's answer would have arrived by now
    idle(qtbot, window)
    assert reports[cancelled_at:] == [], f"a pass ran after the Cancel: {reports[cancelled_at:]}"
    assert window.controller.run_progress.dialog is None, "a progress dialog stands after the Cancel"
    assert window.session.trace is before, "the run before was not kept as it was"
    held = window.worker._loop._state.decoder.trace
    assert held.token_ids.tolist() == before.token_ids.tolist() and held.n_steps == before.n_steps
    line = window.status.currentMessage()
    assert "cancelled" in line and "kept" in line, f"the status line says {line!r}"

    journey_step = step(qtbot, window)               # Step continues the run kept, from its own last choice
    assert journey_step.token_ids[:before.n_tokens].tolist() == before.token_ids.tolist()
    assert journey_step.steps[-1].token_ids.tolist() == [before.steps[-1].chosen_id]
