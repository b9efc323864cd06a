"""The logit lens reads as a table of every layer by rank, in the candidates' room, with no token shown raw."""
from __future__ import annotations

import numpy as np

from explorer.app.panels import NextTokenPanel
from explorer.app.state.session import Session
from tests.app.shared_window import make
from tests.app.synthetic_trace import WORDS, build_trace

NBSP = 1                                           # the id shown as a no-break space


def test_the_lens_takes_the_candidates_room_one_column_a_rank_and_names_odd_characters(qtbot):
    session = Session()
    session.set_token_display(lambda i: "\xa0" if i == NBSP else WORDS[i])
    panel = make(qtbot, session, NextTokenPanel)
    panel.resize(360, 600)
    session.set_trace(build_trace(n_layers=30, prompt_len=5))
    rows = panel.table.rowCount()
    assert rows and panel.table.isVisibleTo(panel)
    ids = np.tile(np.array([[NBSP, 2, 3]]), (30, 1))
    probs = np.tile(np.array([[0.5, 0.3, 0.2]]), (30, 1))
    session.requests.logit_lens_ready.emit({"position": panel.position, "ids": ids, "probs": probs})
    lens = panel.lens_table
    assert lens.isVisibleTo(panel) and not panel.table.isVisibleTo(panel)   # in place of the candidates
    assert lens.rowCount() == 30 and lens.columnCount() == 4
    assert lens.item(29, 1).text() == "⟨U+00A0⟩  0.500" and lens.item(29, 2).text() == f"{WORDS[2]}  0.300"
    texts = [lens.item(r, c).text() for r in range(30) for c in range(4)]
    assert not any("\\x" in t or "\xa0" in t for t in texts)
    qtbot.wait(20)
    shown = lens.viewport().height() // lens.verticalHeader().defaultSectionSize()
    assert shown >= 10, f"only {shown} of 30 layers in view"
    panel.lens_button.click()                           # back to the candidates
    assert panel.table.isVisibleTo(panel) and not lens.isVisibleTo(panel)
