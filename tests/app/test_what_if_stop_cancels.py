"""KV lab ▸ What-if: a conversion stopped by the person reads as cancelled, never as failed.

Drive 20 (m1): SmolLM2, target mqa, stopped at ~29 % → "No result for mqa: the conversion failed." The Stop
(Escape, the toolbar's Stop) reached the panel through the session's one path (drop_work, CANCEL), which
abandoned the runner's job with no message, and an empty message read as a failure. The conversion runs on the
window's model thread, held at a layer's progress report so that the Stop lands mid-conversion.
"""
from __future__ import annotations

import pytest
from PySide6.QtCore import QSize

from tests.app.journey import journey_in_a_window
from tests.app.test_what_if_cancel import WAIT_S, _HeldAt, _what_if_tab

pytestmark = pytest.mark.usefixtures("store_home")  # the store in the test's folder


def test_a_stop_mid_conversion_says_cancelled_not_failed(qtbot, tmp_path, monkeypatch):
    with journey_in_a_window(qtbot, tmp_path, monkeypatch, QSize(1366, 768)) as journey:
        lab = _what_if_tab(journey)
        messages: list[str] = []
        lab.runner.failed.connect(messages.append)
        held = _HeldAt(lab.runner, lambda fraction, what: 0 < fraction < 0.3)     # converting its layers
        try:
            lab.run_button.click()
            held.wait()
            qtbot.waitUntil(lambda: lab.progress.value() > 0, timeout=WAIT_S * 1000)
            journey.window.actions.stop.trigger()    # Escape: the person stops what the model is doing
        finally:
            held.go.set()
        qtbot.waitUntil(lambda: not lab.runner.running, timeout=WAIT_S * 1000)
        journey.idle("the conversion stopped")
        summary = lab.run_summary.text()
        assert "cancelled" in summary.lower() and "failed" not in summary.lower(), summary
        assert not lab.error_line.message, f"a cancel shown as an error: {lab.error_line.message!r}"
        assert messages and "cancelled" in messages[-1].lower(), messages
        assert lab.run_button.isEnabled() and not lab.cancel_button.isEnabled()
