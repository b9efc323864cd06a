"""After a decoding step the model map says, whole, how the new token's row flows: at the end of the panel's
one-line readout the sentence was cut, "…flows along the te…", at 1366x768 (drive21 m4). It is a wrapped note
under the map now: its shown lines hold the whole sentence and each fits the note's width (the font's metrics)."""
from __future__ import annotations

from PySide6.QtGui import QFontMetricsF

import explorer
from explorer.app.panels.model_map import ModelMapPanel
from explorer.app.state.session import Session
from tests.app.shared_window import make
from tests.app.test_qkv_note_whole import shown_lines

PROMPT = "To be, or not to be"


def test_the_decoding_step_note_is_whole_at_a_small_screens_width(qtbot):
    model = explorer.load("shakespeare-gqa")
    session = Session()
    panel = make(qtbot, session, ModelMapPanel)
    panel.resize(614, 400)                       # the centre dock beside Learn at 1366x768
    session.set_model(model.run(PROMPT).trace.model)
    trace = model.run(PROMPT, steps=1).trace
    session.set_trace(trace)
    qtbot.waitUntil(lambda: panel.graph is not None and panel.step_note.isVisible())
    qtbot.wait(50)
    note = panel.step_note
    lines = shown_lines(note)
    text = " ".join(lines)
    assert "flows along the teal edges" in text and text.endswith("come from the KV cache"), lines
    assert f"position {trace.n_tokens - 1}" in text
    metrics = QFontMetricsF(note.document.defaultFont())
    for line in lines:
        assert metrics.horizontalAdvance(line) <= note.width() - 2 * note.PADDING[0] + 1, (line, note.width())
    readout = panel.readout
    assert readout.fontMetrics().horizontalAdvance(readout.text()) <= readout.contentsRect().width()
    session.set_trace(model.run(PROMPT).trace)    # a prefill: nothing is stepping
    qtbot.waitUntil(lambda: not note.isVisible())
