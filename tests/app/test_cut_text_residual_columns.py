"""Down a tall dock (1366 px), the Residual stream's table shows every column whole in the panel's width: each
header's text and every number fit their column, with no scroll bar (issue 22: the last column, ‖h_l‖, was cut
under a horizontal scroll bar, every column as wide as the widest lens token)."""
from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtWidgets import QApplication

from explorer.app.panels.residual import ResidualPanel
from explorer.app.state.session import Session
from explorer.core.attribution import ResidualStream
from tests.app.shared_window import make
from tests.app.synthetic_trace import build_trace

LENS = ["␣Paris", "␣capital", "␣Kingdom", "␣the", ",", "␣located", "␣France", "␣city"]     # SmolLM2's lens words


@pytest.mark.parametrize("size", [(335, 600), (400, 700)], ids=["335", "400"])
def test_every_column_of_the_tall_table_is_whole_without_scrolling(qtbot, size):
    session = Session()
    session.set_token_display(lambda token_id: LENS[token_id % len(LENS)])
    panel = make(qtbot, session, ResidualPanel)
    panel.resize(*size)                            # a tall column of a 1366 px window: layers run down
    trace = build_trace(n_layers=30, prompt_len=5)
    session.set_trace(trace)
    session.select(token=4)
    n = trace.model.n_layers
    stream = ResidualStream(position=4, attn_norms=np.full(n, 25.31), ffn_norms=np.full(n, 31.7),
                            residual_norms=np.linspace(1.0, 253.7, n), lens_ids=np.arange(5 * n).reshape(n, 5),
                            lens_probs=np.full((n, 5), 0.187))
    panel._on_answer((trace.model.name, tuple(int(i) for i in trace.token_ids[:5])), stream)
    QApplication.processEvents()
    table, header = panel.table, panel.table.horizontalHeader()
    assert not panel.layers_across and table.columnCount() == 7
    widths = [table.columnWidth(c) for c in range(table.columnCount())]
    assert table.horizontalScrollBar().maximum() == 0 and sum(widths) <= table.viewport().width(), \
        (widths, table.viewport().width())
    for column in range(table.columnCount()):
        name = table.horizontalHeaderItem(column).text()
        text_px = header.fontMetrics().horizontalAdvance(name)
        assert text_px + 6 <= widths[column], f"header {name!r} ({text_px} px) cut in {widths[column]} px"
    metrics = table.fontMetrics()
    numbers = [(r, c, table.item(r, c).text()) for r in range(n) for c in (1, 3, 4, 5, 6)
               if metrics.horizontalAdvance(table.item(r, c).text()) + 6 > widths[c]]
    assert not numbers, f"numbers cut at their column's width: {numbers[:4]}"
