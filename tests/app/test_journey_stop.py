"""Stop pressed while the model runs an edited prompt: the trace shown before stays, marked out of date.

A person who presses Stop because a run takes long keeps what they were looking at (Qt Creator's
cancelled build keeps the last results). Today it is a race: depending on whether the model thread
has begun the prefill when Stop arrives, the trace before either stays (marked out of date) or is
gone, and every panel reads "Nothing to show yet". Eight tries make the race show.
"""
from __future__ import annotations

import pytest
from PySide6.QtWidgets import QMessageBox

from tests.app.journey import BUNDLED, Journey
from tests.app.screen_fit import SCREENS, emulated_screen
from tests.app.test_window import new_window, store_home  # noqa: F401

TRIES = 8


@pytest.mark.xfail(reason="Stop during the prefill of an edited prompt sometimes drops the trace shown before "
                          "(a race in the run control's cancel path)", strict=False)
def test_stop_during_a_run_of_an_edited_prompt_keeps_the_trace_before(qtbot, tmp_path, monkeypatch):
    size = SCREENS["1366x768"]
    with emulated_screen(size):
        window = new_window(qtbot, tmp_path)
        journey = Journey(qtbot, window, size, tmp_path)
        monkeypatch.setattr(QMessageBox, "warning", lambda parent, title, text, *a: journey.warnings.append(text))
        try:
            journey.open(BUNDLED / "shakespeare-gqa", "To be, or not")
            lost = []
            for attempt in range(TRIES):
                window.prompt.set_text(window.prompt.text + " again")
                window.actions.run.trigger()
                qtbot.waitUntil(lambda: window.worker.busy, timeout=5000)
                journey.act("Stop during the prefill", window.actions.stop.trigger)
                if window.session.trace is None:
                    lost.append(attempt)
                    journey.act("Run again", window.actions.run.trigger)
                else:
                    assert window.session.out_of_date, "the trace kept after Stop is not marked out of date"
            assert not lost, f"Stop dropped the trace shown before in tries {lost} of {TRIES}"
        finally:
            window.close()
