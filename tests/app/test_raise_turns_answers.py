"""Issue 22 (no tab switch blocks the window for more than 100 ms at 8,000 tokens): what a first raise of Why this
token and of the KV lab does in one turn of the event loop, counted, not timed.

Why this token builds its two plots a turn each after the raise's turn; an attribution that comes back from the
model meanwhile is drawn in a turn of its own after them, not by building the plots still to build and drawing it
all in the turn it came in (~80 ms of GUI work). The KV lab's first drawing fills its table of variants once: it
filled the same rows twice (its tokens box set, then its shape), ~70 items and their icons each time."""
from __future__ import annotations

from collections import Counter

import numpy as np
from PySide6.QtWidgets import QApplication, QTableWidget

from explorer.app.panels.attribution import AttributionPanel
from explorer.app.panels.kv_lab import KVLabPanel
from explorer.app.state.session import Session
from explorer.core import kv_variants as kv
from explorer.core.units import human_bytes
from tests.app.synthetic_trace import build_trace
from tests.app.turn_counting import counting_turns
from tests.app.why_helpers import SIZES, shown


def test_an_attribution_come_while_the_plots_are_built_is_drawn_in_a_turn_after_them(qtbot, session, traced_llama,
                                                                                     monkeypatch):
    from explorer.core.attribution import attribute

    loaded, trace = traced_llama
    drawn_in: list = []
    held: list = []
    panel = AttributionPanel(session)
    panel.executor = held.append

    def answer(turn: int) -> None:
        if held:                                  # the model answers before the plots' first turn after the raise
            held.pop()(loaded, lambda: False)
            QApplication.processEvents()          # its answer handed to the panel

    def drawn(turn: int) -> None:
        if panel.result is not None and not drawn_in:
            drawn_in.append(turn)

    made = counting_turns(monkeypatch, before=answer, after=drawn)
    session.set_trace(trace)
    shown(qtbot, panel, SIZES["wide"])           # its first showing: a raise, the attribution asked
    qtbot.waitUntil(lambda: not panel.drawing and panel.result is not None, timeout=10000)

    assert made[0] == made[1] == 0, f"plots made in the panel's raising turn: {dict(made)}"
    assert sum(made.values()) == 2 and max(made.values()) == 1, f"plots made by turn: {dict(made)}"
    assert drawn_in and made[drawn_in[0]] == 0, \
        f"the attribution was drawn in turn {drawn_in} with the plots made in it: {dict(made)}"
    expected = attribute(loaded, trace.token_ids, trace.n_tokens - 1)
    np.testing.assert_allclose(panel.heads.image.image,
                               np.concatenate([expected.heads, expected.mlp[:, None]], axis=1), rtol=1e-6)


def test_the_kv_labs_first_drawing_fills_its_table_once_and_a_new_token_count_again(qtbot, monkeypatch):
    trace = build_trace(n_layers=4, n_heads=6, n_kv_heads=2, d_head=16, max_positions=4096)
    session = Session()
    session.set_model(trace.model)
    session.set_trace(trace)
    items = Counter()
    set_item = QTableWidget.setItem

    def counted(self, row, column, item):
        items[row] += 1
        set_item(self, row, column, item)

    monkeypatch.setattr(QTableWidget, "setItem", counted)
    panel = KVLabPanel(session)
    qtbot.addWidget(panel)
    panel.resize(1200, 400)
    panel.show()
    shape = kv.shape_from_info(trace.model)
    rows = kv.compare(shape, panel.tokens_box.value(), panel.dtype_box.currentText(), None)
    columns = panel.table.columnCount()
    assert dict(items) == {row: columns for row in range(len(rows))}, f"items set per row: {dict(items)}"

    items.clear()
    panel.tokens_box.setValue(panel.tokens_box.value() // 2)        # new totals: the rows made again
    rows = kv.compare(shape, panel.tokens_box.value(), panel.dtype_box.currentText(), None)
    assert sum(items.values()) == len(rows) * columns
    assert [panel.table.item(i, 4).text() for i in range(len(rows))] == [human_bytes(r.bytes_total) for r in rows]


def test_why_this_tokens_view_is_not_painted_half_built_on_its_first_raise(qtbot, session, traced_llama):
    """Its two plots built a turn each, the view is painted once both are: a paint in between painted the bars'
    plot alone, work thrown away a turn later."""
    from PySide6.QtCore import QEvent, QObject

    _, trace = traced_llama
    panel = AttributionPanel(session)
    panel.executor = [].append                       # no answer: the plots alone
    painted = []

    class Paints(QObject):
        def eventFilter(self, watched, event):
            if event.type() == QEvent.Type.Paint:
                painted.append((panel.bars is not None, panel.heads is not None))
            return False

    paints = Paints()
    panel.view.viewport().installEventFilter(paints)
    panel.view.installEventFilter(paints)
    session.set_trace(trace)
    shown(qtbot, panel, SIZES["wide"])
    qtbot.waitUntil(lambda: not panel.drawing, timeout=5000)
    qtbot.wait(100)
    assert (True, True) in painted, f"the built view was not painted: {painted}"
    assert (True, False) not in painted, f"the view was painted with its bars' plot alone: {painted}"
