"""Residual stream in the real window (issue 22): its plot wherever a plot of MIN_PLOT_PX fits, and an explicit
working state while a position's stream is read.

- At 1920x1080 with Learn open beside the panels (SmolLM2, 28 tokens, the residual tab in the lower dock) the panel
  showed its sideways table alone: its body is 1029x287 px, and the plot was only tried above the table (161 + 149
  px). Expectation: the plot a person sees is at least MIN_PLOT_PX each way, and every row of the table is whole in
  its viewport or reached by its scroll bar (a table beside the plot scrolls down to the rest).
- While the model thread works on the asked position the panel showed an empty table, its column names stacked
  down the side as row headers. Expectation: no table with headers is in sight; the panel's note says what it reads
  (the base contract's working state); once the answer comes, the stream of that position is drawn.
"""
from __future__ import annotations

import threading

import pytest
from PySide6.QtWidgets import QTableWidget

from explorer.app.window import learn_placement
from explorer.core import store
from tests.app.journey import BUNDLED, journey_in_a_window
from tests.app.layout_probe import in_sight, plot_boxes
from tests.app.screen_fit import MIN_PLOT_PX, SCREENS

pytestmark = pytest.mark.usefixtures("store_home")  # the store in the test's folder

SMOLLM2 = store.pulled_path("smollm2-135m")          # looked up before a test's empty store
# 28 tokens in SmolLM2's tokenizer
PROMPT = "The quick brown fox jumps over the lazy dog while the cat sleeps on the warm mat near the old wooden " \
         "door today, and then ran"


def cut_rows(table: QTableWidget) -> list[str]:
    """The rows of `table` that a person cannot see whole: cut by its viewport's edge with no scroll bar to reach
    the rest (a table that scrolls down may show its last row in part)."""
    height = table.viewport().height()
    if table.verticalScrollBar().maximum() > 0:
        return []
    return [f"row {row} at {table.rowViewportPosition(row)}+{table.rowHeight(row)} of {height} px"
            for row in range(table.rowCount())
            if table.rowViewportPosition(row) < 0 or table.rowViewportPosition(row) + table.rowHeight(row) > height]


@pytest.mark.realmodel
@pytest.mark.parametrize("learn", [True, False], ids=["learn-open", "learn-closed"])
def test_the_residual_stream_shows_its_plot_at_1920x1080(qtbot, tmp_path, monkeypatch, learn):
    if SMOLLM2 is None:
        pytest.skip("smollm2-135m is not pulled")
    with journey_in_a_window(qtbot, tmp_path, monkeypatch, SCREENS["1920x1080"]) as journey:
        window = journey.window
        journey.open(SMOLLM2, PROMPT)
        assert window.session.trace.n_tokens == 28
        if learn:
            journey.act("Help ▸ Learn", lambda: learn_placement.open_learn(window))
        panel = journey.raise_panel("residual")
        qtbot.waitUntil(lambda: panel.stream is not None, timeout=60000)
        journey.act("residual read", lambda: None)       # Journey.act: every visible plot >= MIN_PLOT_PX
        boxes = [box for box in plot_boxes(window) if box["dock"] == "residual"]
        assert boxes, f"no plot in the {panel.body_widget.width()}x{panel.body_widget.height()} px body"
        assert all(min(box["width"], box["height"]) >= MIN_PLOT_PX for box in boxes), boxes
        assert in_sight(panel.table), "the lens table is out of sight"
        assert not cut_rows(panel.table), cut_rows(panel.table)


def tables_in_sight(panel) -> list[str]:
    """The tables a person sees in `panel` that show header names (an empty table's row names standing alone)."""
    seen = []
    for table in panel.findChildren(QTableWidget):
        if table.isVisibleTo(panel) and panel.isVisible() and (table.rowCount() or table.columnCount()):
            seen.append(f"{table.rowCount()}x{table.columnCount()} table")
    return seen


def test_the_residual_stream_says_it_works_while_the_model_thread_reads(qtbot, tmp_path, monkeypatch):
    with journey_in_a_window(qtbot, tmp_path, monkeypatch, SCREENS["1920x1080"]) as journey:
        window = journey.window
        journey.open(BUNDLED / "shakespeare-gqa", "To be, or not to be, that is the question")
        panel = journey.raise_panel("residual")
        qtbot.waitUntil(lambda: panel.stream is not None, timeout=60000)
        journey.act("residual read", lambda: None)
        release = threading.Event()
        window.session.requests.model_job_requested.emit(lambda loaded, cancelled: release.wait(30))  # held
        try:
            window.session.select(token=2)           # the stream at 2 is asked, queued behind the held job
            qtbot.wait(100)
            assert panel.stream is None and panel.asker.busy, "the stream at 2 was not being read"
            assert not tables_in_sight(panel), tables_in_sight(panel)
            assert panel.drawn().kind == "working", panel.drawn()
            assert panel.note.isVisibleTo(panel) and "position 2" in panel.note.text(), panel.note.text()
        finally:
            release.set()
        qtbot.waitUntil(lambda: panel.stream is not None, timeout=60000)
        journey.act("the stream at 2 read", lambda: None)    # Journey.act: the trace drawn, no note over it
        assert panel.stream.position == 2 and panel.drawn().kind == "trace"
        assert in_sight(panel.table) and not panel.note.isVisibleTo(panel)
