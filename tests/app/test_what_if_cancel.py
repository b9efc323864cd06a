"""KV lab ▸ What-if: Cancel says so at once, and the conversion stops within a layer's work.

Issue 22: after Cancel the view still read "Converting… 13 %" with Cancel enabled for 15–20 s, until the model
thread reached its next check and "The conversion was cancelled" came; the prompt's passes through both models
(after the conversion, before the first decoding step) had no check at all. The conversion runs on the window's
model thread as the app runs it, held at a chosen progress report with threading events so that Cancel lands
there whatever the machine's speed.
"""
from __future__ import annotations

import threading

import pytest
from PySide6.QtCore import QSize

from tests.app.journey import BUNDLED, journey_in_a_window

pytestmark = pytest.mark.usefixtures("store_home")  # the store in the test's folder

WAIT_S = 30


class _HeldAt:
    """The conversion's thread waits, once, just after the first progress report that `stop_at(fraction, what)`
    accepts, until released."""

    def __init__(self, runner, stop_at) -> None:
        self.reached, self.go = threading.Event(), threading.Event()
        report = runner._progress

        def held(generation: int, fraction: float, what: str) -> None:
            report(generation, fraction, what)
            if stop_at(fraction, what) and not self.reached.is_set():
                self.reached.set()
                self.go.wait(WAIT_S)
        runner._progress = held

    def wait(self) -> None:
        assert self.reached.wait(WAIT_S), "the conversion never reached the report it is held at"


def _counted(forward, calls: list):
    def counted(*args, **kwargs):
        calls.append(1)
        return forward(*args, **kwargs)
    return counted


def _what_if_tab(journey):
    journey.open(BUNDLED / "shakespeare-gqa", "To be, or not to be, that is")
    lab = journey.raise_panel("kv_lab")
    journey.act("the what-if tab", lambda: lab.tabs.setCurrentIndex(1))
    assert lab.variant_box.count() > 0, "no what-if target offered"
    return lab


def test_cancel_disables_itself_and_says_cancelling_at_once(qtbot, tmp_path, monkeypatch):
    with journey_in_a_window(qtbot, tmp_path, monkeypatch, QSize(1366, 768)) as journey:
        lab = _what_if_tab(journey)
        held = _HeldAt(lab.runner, lambda fraction, what: 0 < fraction < 0.3)     # converting its layers
        try:
            lab.run_button.click()
            held.wait()
            qtbot.waitUntil(lambda: lab.progress.value() > 0, timeout=WAIT_S * 1000)
            lab.cancel_button.click()
            qtbot.wait(50)                            # what the window shows now, the model thread still held
            assert not lab.cancel_button.isEnabled(), "Cancel is still enabled after it was pressed"
            assert "Cancelling" in lab.run_summary.text(), f"the summary reads {lab.run_summary.text()!r}"
            assert "cancelling" in lab.progress.format(), f"the bar reads {lab.progress.format()!r}"
            lab.redraw()                              # the panel drawn again meanwhile (a new selection, a resize)
            assert not lab.cancel_button.isEnabled(), "a redraw turned Cancel on again while it is cancelling"
        finally:
            held.go.set()
        qtbot.waitUntil(lambda: "was cancelled" in lab.run_summary.text(), timeout=WAIT_S * 1000)
        journey.idle("the conversion cancelled")
        assert lab.run_button.isEnabled() and not lab.cancel_button.isEnabled()


def test_a_cancel_after_the_conversion_stops_the_prompts_pass_within_a_layer(qtbot, tmp_path, monkeypatch):
    """Cancel pressed as the conversion ends: of the prompt's passes through the original and the converted
    model, at most the layer under way runs (counted on the original model's blocks, whose forward the model calls
by name: a forward hook would not fire)."""
    with journey_in_a_window(qtbot, tmp_path, monkeypatch, QSize(1366, 768)) as journey:
        lab = _what_if_tab(journey)
        held = _HeldAt(lab.runner, lambda fraction, what: what == "done" and fraction < 1)   # converted, not run
        layers_run, blocks = [], []
        try:
            lab.run_button.click()
            held.wait()
            model = journey.window.worker._loop._state.loaded.model       # the model thread waits: safe to touch
            blocks = list(model.layers)
            for block in blocks:
                block.forward = _counted(block.forward, layers_run)
            lab.cancel_button.click()
        finally:
            held.go.set()
        qtbot.waitUntil(lambda: "was cancelled" in lab.run_summary.text(), timeout=WAIT_S * 1000)
        journey.idle("the conversion cancelled")
        for block in blocks:
            del block.forward                         # the class's own again
        assert len(model.layers) > 1, "a one-layer model cannot tell a check per layer from one per pass"
        assert len(layers_run) <= 1, f"{len(layers_run)} layers of {len(model.layers)} ran after Cancel"
