"""A tab raised for the first time at a long trace (issue 22): the Q/K/V and mask panels come into sight saying
they are drawing, build their plots, fold the mask and measure their thousands of row labels over several turns
of the event loop, none of which does more than one heavy piece of the work, and end up drawing what a panel
drawn at once draws, array for array and pixel for pixel. Another run arriving meanwhile drops the parts left,
so nothing of the older trace is drawn after it. The trace comes from a tiny random Llama at 3,000 tokens."""
from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtWidgets import QApplication

from explorer.app.panels import MaskPanel, QKVPanel
from explorer.app.panels import drawing_parts as base_module
from explorer.app.panels import mask as mask_module
from explorer.app.panels import qkv as qkv_module
from explorer.app.state.session import Session
from explorer.app.widgets.token_labels import tick_labels
from explorer.drawing import heatmap_axes
from explorer.views import trace_views
from tests.app.long_prompt import long_decoder

N = 3000


@pytest.fixture(scope="module")
def traces():
    """A prefill of N tokens and one decoding step after it."""
    decoder = long_decoder(N)
    decoder.prefill(np.arange(N) % 96)
    first = decoder.trace
    return first, decoder.step()


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
    """The heavy work each turn does: plots built, maps given their data, masks folded, labels measured."""

    def __init__(self, monkeypatch, panel) -> None:
        self.turns: list[dict] = []
        self.now = self._new()
        original = base_module.label_widths            # the panels measure through drawing_parts.measuring
        monkeypatch.setattr(base_module, "label_widths",
                            lambda labels, font=None, original=original: self._measured(labels, font, original))
        fold = mask_module.mask_blocks
        monkeypatch.setattr(mask_module, "mask_blocks", lambda *a, **k: self._count("folds") or fold(*a, **k))
        heatmap_class = qkv_module.Heatmap
        monkeypatch.setattr(qkv_module, "Heatmap", lambda *a, **k: self._count("plots") or heatmap_class(*a, **k))
        original_set = heatmap_class.set_matrix

        def set_matrix(heatmap, matrix, *args, **kwargs):
            self._count("maps")
            self.now["labels"] += heatmap_axes.unmeasured(list(args[1] or ())) if len(args) > 1 else 0
            return original_set(heatmap, matrix, *args, **kwargs)

        monkeypatch.setattr(heatmap_class, "set_matrix", set_matrix)
        next_part = panel._turns.step

        def one_turn():                       # each later part runs in a turn of its own (a zero timer)
            self.end_turn()
            next_part()

        monkeypatch.setattr(panel._turns, "step", one_turn)

    @staticmethod
    def _new() -> dict:
        return {"plots": 0, "maps": 0, "folds": 0, "labels": 0}

    def _count(self, what: str) -> None:
        self.now[what] += 1

    def _measured(self, labels, font, original):
        self.now["labels"] += heatmap_axes.unmeasured(labels, font)
        return original(labels, font)

    def end_turn(self) -> None:
        self.turns.append(self.now)
        self.now = self._new()


def heavy_pieces(turn: dict, rows: int) -> int:
    """Plots built, maps drawn, masks folded, and labels measured (if any: fewer than the rows' all)."""
    assert turn["labels"] < rows, f"a turn measured {turn['labels']} labels"
    return turn["plots"] + turn["maps"] + turn["folds"] + (turn["labels"] > 0)


def drawn_at_once(qtbot, cls, trace):
    """The panel shown first, then given the trace: drawn whole as the trace comes."""
    panel = built(qtbot, new_session(), cls)
    panel.show()
    qtbot.waitExposed(panel)
    panel.session.set_trace(trace)
    assert not panel.drawing
    return panel


def settled_picture(panel):
    """The panel as painted, laid out, with no keyboard focus (the active window's spin box draws a frame)."""
    QApplication.processEvents()
    if panel.focusWidget() is not None:
        panel.focusWidget().clearFocus()
    panel.settle_views()
    return panel.grab().toImage()


@pytest.mark.parametrize("cls", [QKVPanel, MaskPanel])
def test_the_first_raise_at_a_long_trace_draws_in_turns_what_a_drawing_at_once_draws(qtbot, monkeypatch, traces, cls):
    first, _ = traces
    heatmap_axes._WIDTHS.clear()                   # no labels measured by an earlier test
    panel = built(qtbot, new_session(first), cls)
    turns = Turns(monkeypatch, panel)
    panel.show()                                   # the tab raised: built and shown with the trace already there
    assert panel.drawing and panel.note.isVisible() and panel.note.text() == panel.drawing_text
    qtbot.waitUntil(lambda: not panel.drawing, timeout=60_000)
    turns.end_turn()
    assert not panel.note.isVisible()
    total = {what: sum(turn[what] for turn in turns.turns) for what in turns.now}
    assert total["labels"] >= N                    # the row labels were measured, in the turns seen
    assert total["maps"] >= 1 and (total["plots"] == 3 if cls is QKVPanel else total["folds"] == 1)
    assert all(heavy_pieces(turn, N) <= 1 for turn in turns.turns), str(turns.turns)
    monkeypatch.undo()

    once = drawn_at_once(qtbot, cls, first)
    assert settled_picture(panel) == settled_picture(once)
    if cls is QKVPanel:
        assert list(panel.matrices) == list(once.matrices) == ["Q_0", "K_0", "V_0"]
        for name, heatmap in panel.heatmaps.items():
            other = once.heatmaps[name]
            np.testing.assert_array_equal(heatmap.image.image, other.image.image)
            assert np.asarray(heatmap.image.levels).tolist() == np.asarray(other.image.levels).tolist()
            assert heatmap.axes["left"]._labels == other.axes["left"]._labels
            assert heatmap.axes["left"].width() == other.axes["left"].width()
        np.testing.assert_array_equal(panel.matrices["Q_0"], first.q(0, 0).astype(np.float32))
    else:
        np.testing.assert_array_equal(panel.mask, once.mask)
        assert panel.extent == once.extent == (N, N)
        assert panel.heatmap.axes["left"]._labels == once.heatmap.axes["left"]._labels
        assert panel.heatmap.axes["left"].width() == once.heatmap.axes["left"].width()
        assert panel.formula == once.formula


@pytest.mark.parametrize("cls", [QKVPanel, MaskPanel])
def test_a_new_run_while_drawing_in_turns_draws_only_the_new_trace(qtbot, traces, cls):
    first, second = traces
    heatmap_axes._WIDTHS.clear()
    session = new_session(first)
    panel = built(qtbot, session, cls)
    panel.show()
    assert panel.drawing
    session.set_trace(second)                      # a decoding step's trace, N + 1 rows, before the parts ran
    qtbot.waitUntil(lambda: not panel.drawing, timeout=60_000)
    for _ in range(3):                             # a part of the older drawing still queued would run now
        QApplication.processEvents()
    if cls is QKVPanel:
        np.testing.assert_array_equal(panel.matrices["Q_0"], second.q(0, 0).astype(np.float32))
        assert all(heatmap.shape == (N + 1, first.model.d_qk) for heatmap in panel.heatmaps.values())
        assert len(panel.heatmaps["Q_0"].axes["left"]._labels) == N + 1
    else:
        assert panel.extent == panel.heatmap.shape == (N + 1, N + 1)
        assert len(panel.heatmap.axes["left"]._labels) == N + 1
        assert f"{N + 1}×{N + 1}" in panel.formula


@pytest.mark.parametrize("cls", [QKVPanel, MaskPanel])
def test_raised_again_after_a_step_it_draws_at_once(qtbot, traces, cls):
    """A step's one new row label is no long drawing: the tab raised again shows the step at once, without
    'Drawing…' coming and going."""
    first, second = traces
    session = new_session(first)
    panel = built(qtbot, session, cls)
    panel.show()
    qtbot.waitUntil(lambda: not panel.drawing, timeout=60_000)
    panel.hide()                                   # behind another tab
    session.set_trace(second)
    panel.show()
    assert not panel.drawing and not panel.note.isVisible()
    shape = panel.heatmaps["Q_0"].shape if cls is QKVPanel else panel.heatmap.shape
    assert shape[0] == N + 1


def test_the_mask_folds_in_a_later_turn_when_its_row_labels_were_measured_already(qtbot, traces):
    """The Q/K/V tab, raised first, measured the same numbered row labels: the mask still folds its N rows in a
    turn after the raise, and draws what a mask drawn at once draws."""
    first, _ = traces
    heatmap_axes.label_widths(tick_labels(trace_views.view(first).row_text(), numbered=True))
    panel = built(qtbot, new_session(first), MaskPanel)
    panel.show()
    assert panel.drawing and panel.mask is None
    qtbot.waitUntil(lambda: not panel.drawing, timeout=60_000)
    np.testing.assert_array_equal(panel.mask, drawn_at_once(qtbot, MaskPanel, first).mask)
