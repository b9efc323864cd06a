"""Residual stream after a model switch: raised on the new model, the panel reads and draws that model's
stream and does not stay at "reading the residual stream…" (seen going from SmolLM2 to the MLA model: the
panel kept waiting for an answer the model before would never give). The switch comes both after the
stream was drawn and while it is still being read.

Expectation: the new model's own number of layers, read from its config.json, and the selected position's
stream drawn (no "reading" left in the formula or the readout).
"""
from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
import transformers  # noqa: E402,F401  (the tiny model is written with it; missing, the run fails, never skips)

from tests.app.tiny_model import make_tiny_llama
from tests.app.window_helpers import idle, new_window

pytestmark = pytest.mark.usefixtures("store_home")

BUNDLED_MLA = Path(__file__).resolve().parents[2] / "resources" / "models" / "shakespeare-mla"
PROMPT = "To be, or not to be"


def layers_of(folder: Path) -> int:
    return int(json.loads((folder / "config.json").read_text())["num_hidden_layers"])


def opened(qtbot, window, folder: Path):
    return idle(qtbot, window, lambda: window.controller.reference == str(folder) and window.session.trace is not None
                and window.session.trace.model.name == window.controller.summary.name)


def residual_raised(qtbot, window):
    dock = window.docks["residual"]
    dock.show()
    dock.raise_()
    panel = dock.widget()
    qtbot.waitUntil(panel.is_shown, timeout=10000)
    return panel


def residual_drawn(qtbot, window):
    panel = residual_raised(qtbot, window)
    qtbot.waitUntil(lambda: panel.stream is not None and "reading" not in panel.formula
                    and "reading" not in panel.readout.text(), timeout=60000)
    idle(qtbot, window)
    return panel


def test_the_residual_stream_is_read_again_for_the_new_model_after_a_switch(qtbot, tmp_path, dialogs):
    llama = make_tiny_llama(tmp_path / "tiny-llama")
    window = new_window(qtbot, tmp_path)
    window.resize(1400, 900)
    try:
        window.prompt.set_text(PROMPT)
        # (the folder opened, whether the next switch comes while this model's stream is still being read)
        gate = None
        for folder, while_reading in ((llama, False), (BUNDLED_MLA, True), (llama, True), (BUNDLED_MLA, False)):
            window.open_model(str(folder))
            if gate is not None:
                gate.set()                                 # the model thread goes on: the switch is queued
            trace = opened(qtbot, window, folder)
            if while_reading:                              # the stream asked behind a job that holds the thread
                gate = threading.Event()
                window.session.requests.model_job_requested.emit(lambda _loaded, _cancelled, g=gate: g.wait(30))
                window.session.select(token=trace.n_tokens - 2)
                panel = residual_raised(qtbot, window)
                assert panel.asker.call.running and panel.stream is None
                continue
            gate = None
            window.session.select(token=trace.n_tokens - 2)
            panel = residual_drawn(qtbot, window)
            assert len(panel.stream.residual_norms) == layers_of(folder), folder.name
            assert panel.stream.position == trace.n_tokens - 2 == panel.position
            assert panel.shown_key[0] == trace.model.name
        assert not dialogs["warnings"], dialogs["warnings"]
    finally:
        window.close()
