"""The Q/K/V and Embeddings tabs raised for the first time at a long trace (issue 22: no tab switch blocks for
more than 100 ms) do one heavy piece of work per turn of the event loop at most: a plot built, the plots laid
out, the rows stacked, the rows' labels made, a share of them measured, a map given its data, the norms' bars
drawn. Counted, not timed. They end up drawing what a panel drawn at once draws. A trace of a tiny random Llama
at 3,000 tokens."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from PySide6.QtWidgets import QApplication

from explorer.app.panels import EmbeddingsPanel, QKVPanel
from explorer.app.panels import drawing_parts as base_module
from explorer.app.state.session import Session
from explorer.app.widgets import map_grid, stacked_rows, token_labels
from explorer.drawing import heatmap, heatmap_axes
from explorer.views.maps import short_label
from tests.app.long_prompt import long_decoder

N = 3000
PIECES = ("plots", "layouts", "stacked", "made", "measured", "maps", "norms")


@pytest.fixture(scope="module")
def traces():
    """A prefill of N tokens and one decoding step after it."""
    decoder = long_decoder(N)
    decoder.prefill(np.arange(N) % 96)
    first = decoder.trace
    return first, decoder.step()


@pytest.fixture
def trace(traces):
    return traces[0]


def new_session(trace=None) -> Session:
    session = Session()
    session.set_token_display(lambda token_id: f"tok{token_id}")
    if trace is not None:
        session.set_trace(trace)
    return session


def built(qtbot, session, cls):
    panel = cls(session)
    qtbot.addWidget(panel)
    panel.resize(1000, 650)
    return panel


class Turns:
    """The heavy pieces of work each turn does, by kind; a turn ends where the panel's next part is called (a
    queued call: a turn of its own)."""

    def __init__(self, monkeypatch, panel) -> None:
        self.turns: list[dict] = []
        self.now = dict.fromkeys(PIECES, 0)
        count = self._count

        def counting(owner, name, what, size=lambda *a, **k: 1, original=None):
            original = original or getattr(owner, name)
            monkeypatch.setattr(owner, name, lambda *a, **k: (count(what, size(*a, **k)), original(*a, **k))[1],
                                raising=False)

        counting(heatmap.Heatmap, "__init__", "plots")
        counting(heatmap.Heatmap, "set_matrix", "maps")
        counting(map_grid.MapGrid, "hold", "layouts")
        counting(stacked_rows.StackedRows, "_append", "stacked", lambda self, rows: len(rows))
        counting(token_labels, "numbered_label", "made")
        counting(EmbeddingsPanel, "_draw_norms", "norms")
        unmeasured = heatmap_axes.unmeasured
        counting(base_module, "label_widths", "measured", lambda labels, font=None: unmeasured(labels, font),
                 heatmap_axes.label_widths)                  # the panels measure through drawing_parts.measuring
        next_part = panel._turns.step

        def one_turn():
            self.end_turn()
            next_part()

        monkeypatch.setattr(panel._turns, "step", one_turn)

    def _count(self, what: str, n: int) -> None:
        self.now[what] += n

    def end_turn(self) -> None:
        self.turns.append(self.now)
        self.now = dict.fromkeys(PIECES, 0)

    def total(self) -> dict:
        return {what: sum(turn[what] for turn in self.turns) for what in PIECES}


def heavy_pieces(turn: dict) -> int:
    """Plots built, layouts, maps and norms drawn, one each; rows stacked, labels made or measured: one piece
    where there are many of them (a decoding step's few are no heavy work), and never all N in one turn but
    where that is all the piece does."""
    many = [what for what in ("stacked", "made", "measured") if turn[what] >= 100]
    assert turn["measured"] < N, f"a turn measured all {turn['measured']} labels"
    return turn["plots"] + turn["layouts"] + turn["maps"] + turn["norms"] + len(many)


def settled_picture(panel):
    QApplication.processEvents()
    if panel.focusWidget() is not None:
        panel.focusWidget().clearFocus()
    panel.settle_views()
    return panel.grab().toImage()


def drawn_at_once(qtbot, cls, trace):
    panel = built(qtbot, new_session(), cls)
    panel.show()
    qtbot.waitExposed(panel)
    panel.session.set_trace(trace)
    assert not panel.drawing
    return panel


@pytest.fixture
def fresh_labels():
    """No labels made nor measured by an earlier test: the raise makes and measures all N."""
    heatmap_axes._WIDTHS.clear()
    token_labels.numbered_label.cache_clear()
    token_labels.tick_label.cache_clear()


@pytest.mark.parametrize("cls", [QKVPanel, EmbeddingsPanel])
def test_a_first_raise_at_a_long_trace_does_one_heavy_piece_a_turn(qtbot, monkeypatch, trace, fresh_labels, cls):
    panel = built(qtbot, new_session(trace), cls)
    turns = Turns(monkeypatch, panel)
    panel.show()                                   # the tab raised: shown with the trace already there
    assert panel.drawing and panel.note.text() == panel.drawing_text
    qtbot.waitUntil(lambda: not panel.drawing, timeout=60_000)
    turns.end_turn()
    total = turns.total()
    assert total["made"] >= N and total["measured"] >= N and total["maps"] >= 1, total
    if cls is QKVPanel:
        assert total["plots"] == 3 and total["layouts"] == 1
        assert total["made"] < 2 * N, f"Q, K and V made their shared labels {total['made'] / N:.0f} times"
    else:
        assert total["stacked"] == N and total["norms"] == 1
    assert all(heavy_pieces(turn) <= 1 for turn in turns.turns), str(turns.turns)


@pytest.mark.parametrize("cls", [QKVPanel, EmbeddingsPanel])
def test_drawn_in_turns_it_draws_what_a_drawing_at_once_draws(qtbot, trace, cls):
    panel = built(qtbot, new_session(trace), cls)
    panel.show()
    assert panel.drawing
    qtbot.waitUntil(lambda: not panel.drawing, timeout=60_000)
    once = drawn_at_once(qtbot, cls, trace)
    assert settled_picture(panel) == settled_picture(once)
    pairs = ([(panel.heatmaps[name], once.heatmaps[name]) for name in once.heatmaps] if cls is QKVPanel
             else [(panel.heatmap, once.heatmap)])
    assert pairs and (list(panel.heatmaps) == list(once.heatmaps) if cls is QKVPanel else True)
    for drawn, expected in pairs:
        np.testing.assert_array_equal(drawn.image.image, expected.image.image)
        assert np.asarray(drawn.image.levels).tolist() == np.asarray(expected.image.levels).tolist()
        assert drawn.axes["left"]._labels == expected.axes["left"]._labels
        assert drawn.axes["left"].width() == expected.axes["left"].width()
    numbered = [f"{i} {short_label(text)}" for i, text in enumerate(trace.token_text)]
    assert all(drawn.axes["left"]._labels == numbered for drawn, _ in pairs)
    if cls is QKVPanel:
        np.testing.assert_array_equal(panel.matrices["Q_0"], trace.q(0, 0).astype(np.float32))
    else:
        embeddings = np.concatenate([step.embeddings for step in trace.steps]).astype(np.float32)
        np.testing.assert_array_equal(panel.matrix, embeddings)
        assert panel.formula == once.formula
        for key in ("y", "width"):
            np.testing.assert_array_equal(panel.norm_bars.opts[key], once.norm_bars.opts[key])


def test_embeddings_raised_again_after_a_step_draw_at_once(qtbot, traces):
    """A decoding step's one new row is no long drawing: raised again, the tab draws at once."""
    first, step = traces
    session = new_session(first)
    panel = built(qtbot, session, EmbeddingsPanel)
    panel.show()
    qtbot.waitUntil(lambda: not panel.drawing, timeout=60_000)
    panel.hide()
    session.set_trace(step)
    panel.show()
    assert not panel.drawing and panel.heatmap.shape[0] == N + 1


def test_rows_stacked_in_parts_and_dropped_halfway_are_stacked_whole_again():
    """A drawing dropped while its rows were being stacked (a new run came) leaves no half of them behind."""
    first = np.arange(12, dtype=np.float32).reshape(6, 2)
    other = -np.arange(12, dtype=np.float32).reshape(6, 2) * 10
    records = (SimpleNamespace(rows=first[:2]), SimpleNamespace(rows=first[2:]))
    rows = stacked_rows.StackedRows(lambda record: record.rows)
    rows.stack(records[:1])
    parts = rows.stack_in_parts(records, 1)
    next(parts)                                   # the second record's first row stacked, then dropped
    parts.close()
    changed = (records[0], SimpleNamespace(rows=other[2:]))
    np.testing.assert_array_equal(rows.stack(changed), np.concatenate([first[:2], other[2:]]))
    assert rows.top == np.abs(np.concatenate([first[:2], other[2:]])).max()
    np.testing.assert_allclose(rows.norms, np.linalg.norm(np.concatenate([first[:2], other[2:]]), axis=1))
    assert list(rows.stack_in_parts(records, 1)) == [None] * 4     # a row a part: a yield between rows of a record
    np.testing.assert_array_equal(rows.stack(records), first)
