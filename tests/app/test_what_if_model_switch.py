"""KV lab ▸ What-if: a model switch asked while a conversion runs cancels it at once, and the view says so (issue 22).

On a bare X screen, switching the Model box during a conversion left KV lab reading "Converting… 1 %" with Cancel
live for several seconds while the Model box already named the new model, and nothing said a switch was under
way. The conversion runs on the window's model thread as the app runs it, held at its first layer's report with
threading events, so that the switch is asked while it runs whatever the machine's speed.
"""
from __future__ import annotations

import pytest
from PySide6.QtCore import QSize

from tests.app.journey import BUNDLED, journey_in_a_window
from tests.app.test_what_if_cancel import WAIT_S, _HeldAt, _what_if_tab

pytestmark = pytest.mark.usefixtures("store_home")  # the store in the test's folder


def test_a_model_switch_cancels_the_conversion_and_says_so(qtbot, tmp_path, monkeypatch):
    with journey_in_a_window(qtbot, tmp_path, monkeypatch, QSize(1366, 768)) as journey:
        lab, window = _what_if_tab(journey), journey.window
        held = _HeldAt(lab.runner, lambda fraction, what: 0 < fraction < 0.3)     # converting its layers
        try:
            lab.run_button.click()
            held.wait()
            qtbot.waitUntil(lambda: lab.progress.value() > 0, timeout=WAIT_S * 1000)
            window.open_model(str(BUNDLED / "shakespeare-mqa"))      # the Model box's path
            qtbot.wait(50)                            # what the window shows now, the model thread still held
            summary = lab.run_summary.text()
            assert "cancelled" in summary.lower() and "another model is being opened" in summary, \
                f"a switch is under way and the what-if reads {summary!r}"
            assert summary.lower().count("cancel") == 1, f"one sentence says the cancel once: {summary!r}"
            error = lab.what_if.error_line.message
            assert not error, f"the cancel shown as an error: {error!r}"
            assert not lab.cancel_button.isEnabled(), "Cancel is live for a conversion the switch cancelled"
            assert not lab.runner.running
            assert not lab.run_button.isEnabled(), "Run is live while another model is being opened"
            assert "Converting" not in lab.progress.format(), f"the bar reads {lab.progress.format()!r}"
        finally:
            held.go.set()
        journey.idle("the model switched")
        assert window.controller.summary.name != "shakespeare-gqa" or window.controller.reference.endswith("mqa")
        assert not lab.cancel_button.isEnabled()
