"""Next token ▸ logit lens in a narrow column (a 1366 px screen's share): every cell is shown whole, the
ranks scrolling sideways, never cut to "0…" or "25…" (seen at 1366x768 with SmolLM2's 30 layers).

Expectation: each cell's text measured with the table's own font fits its column.
"""
from __future__ import annotations

import numpy as np
from PySide6.QtWidgets import QApplication

from explorer.app.panels import NextTokenPanel
from explorer.app.state.session import Session
from tests.app.shared_window import make
from tests.app.synthetic_trace import WORDS, build_trace

N_LAYERS, K = 30, 5
MARGIN_PX = 6                   # a cell's padding either side of its text


def test_every_logit_lens_cell_is_shown_whole_in_a_narrow_panel(qtbot):
    session = Session()
    session.set_token_display(lambda i: WORDS[i] * 3)           # long tokens: ' cat cat cat'
    panel = make(qtbot, session, NextTokenPanel)
    panel.resize(300, 600)
    session.set_trace(build_trace(n_layers=N_LAYERS, prompt_len=5))
    ids = np.tile(np.arange(1, K + 1), (N_LAYERS, 1))
    probs = np.tile(np.array([0.251, 0.187, 0.098, 0.05, 0.012]), (N_LAYERS, 1))
    session.requests.logit_lens_ready.emit({"position": panel.position, "ids": ids, "probs": probs})
    QApplication.processEvents()
    lens = panel.lens_table
    assert lens.isVisibleTo(panel) and (lens.rowCount(), lens.columnCount()) == (N_LAYERS, K + 1)
    metrics = lens.fontMetrics()
    cut = [(r, c, lens.item(r, c).text()) for r in range(N_LAYERS) for c in range(K + 1)
           if metrics.horizontalAdvance(lens.item(r, c).text()) + MARGIN_PX > lens.columnWidth(c)]
    assert not cut, f"cells cut at their column's width: {cut[:4]}"
    assert lens.item(0, 1).text().endswith("0.251") and WORDS[1] * 3 in lens.item(0, 1).text()
    assert lens.horizontalScrollBar().maximum() > 0             # the ranks scroll sideways instead
