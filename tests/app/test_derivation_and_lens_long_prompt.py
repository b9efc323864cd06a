"""Show the work and the logit lens at 8,000 tokens (issue 16): the derivation reads one row of A and draws the
cells around it, never a T x T array, and still matches its check and numpy's own softmax; a logit lens
answered for another trace is never shown."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from explorer.app.panels import NextTokenPanel
from explorer.app.panels.derivation import DerivationPanel
from explorer.core.attention_maps import MaskRule
from explorer.core.trace import AttentionRecord, Trace
from tests.app.shared_window import make
from tests.app.test_panels_long_prompt import N

LAYER, HEAD, ROW = 1, 2, 5000


@pytest.fixture
def no_dense_maps(monkeypatch):
    """Every way to a T x T mask or map raises; a decoding step's own stored row of weights (1, n_kv) may be
    unpacked (the prompt's may not)."""
    def refuse(*args, **kwargs):
        raise AssertionError("a view asked for a dense T x T array")

    for owner, name in ((Trace, "mask"), (Trace, "attention"), (Trace, "attention_head"), (Trace, "scores"),
                        (MaskRule, "__array__")):
        monkeypatch.setattr(owner, name, refuse)
    weights_of = AttentionRecord.weights_of

    def one_row_only(record, head=None):
        assert record.n_new == 1, "a view asked for a prompt's dense weights"
        return weights_of(record, head)

    monkeypatch.setattr(AttentionRecord, "weights_of", one_row_only)


def softmax_row(trace: Trace, layer: int, head: int, row: int) -> np.ndarray:
    """A_i = softmax(q_i K^T / sqrt(d)) over the keys j <= i of a causal prompt, in float64: (T,)."""
    q = trace.q(layer, head).astype(np.float64)[row]                             # (d,)
    keys = trace.k(layer, trace.kv_head_of(head)).astype(np.float64)            # (T, d)
    s = keys @ q / np.sqrt(q.size)
    s[row + 1:] = -np.inf
    e = np.exp(s - s[: row + 1].max())
    return e / e.sum()


def test_the_derivation_at_8000_tokens_reads_one_row_and_matches_its_check(qtbot, t_session, traces_8000,
                                                                           no_dense_maps):
    first, _, last = traces_8000
    panel = make(qtbot, t_session, DerivationPanel)
    t_session.set_trace(last)                                                      # after two decoding steps
    t_session.select(layer=LAYER, head=HEAD, token=ROW)
    qtbot.waitUntil(lambda: panel.derived is not None and panel.derived.row == ROW, timeout=60_000)  # off the GUI
    cell = panel.derived
    expected = softmax_row(last, LAYER, HEAD, ROW)
    assert cell.row == ROW and cell.column == int(np.argmax(expected))          # the row's largest weight
    assert cell.weight == pytest.approx(expected[cell.column], abs=1e-6) and cell.max_delta < 1e-4
    values = last.v(LAYER, last.kv_head_of(HEAD)).astype(np.float64)
    np.testing.assert_allclose(cell.output, expected @ values, atol=1e-6)      # y_i = A_i V
    rows, cols = panel.map.shape
    top, left = panel.offset
    assert rows * cols <= 64 * 64 and top <= ROW < top + rows and left <= cell.column < left + cols
    shown = panel.map.image.image                                                # the window as drawn
    for r in (0, rows - 1):
        want = softmax_row(last, LAYER, HEAD, top + r)[left: left + cols]
        visible = np.arange(left, left + cols) <= top + r
        np.testing.assert_allclose(shown[r][visible], want[visible], atol=1e-6)
        assert np.isnan(shown[r][~visible]).all()                                # masked cells are not drawn
    assert panel.map.highlighted == (ROW - top, cell.column - left)
    assert f"of the {N + 2}×{N + 2} map" in panel.readout.text()


def test_a_click_in_the_window_derives_that_cell_of_the_trace(qtbot, t_session, traces_8000, no_dense_maps):
    first, _, _ = traces_8000
    panel = make(qtbot, t_session, DerivationPanel)
    t_session.set_trace(first)
    t_session.select(layer=LAYER, head=HEAD, token=ROW)
    qtbot.waitUntil(lambda: panel.derived is not None, timeout=60_000)          # derived off the GUI thread
    top, left = panel.offset
    rows, _ = panel.map.shape
    panel._clicked(rows - 1, 3)                                                  # the selected row, 4th column
    qtbot.waitUntil(lambda: panel.derived.column == left + 3, timeout=60_000)
    assert (panel.derived.row, panel.derived.column) == (ROW, left + 3)
    assert panel.derived.weight == pytest.approx(softmax_row(first, LAYER, HEAD, ROW)[left + 3], abs=1e-6)
    panel._clicked(rows - 2, 0)                                                  # a row above: that token
    qtbot.waitUntil(lambda: panel.derived.row == top + rows - 2, timeout=60_000)
    assert t_session.selection.token == top + rows - 2


def test_a_lens_answered_for_another_trace_is_not_shown(qtbot, t_session, traces_8000):
    first, second, _ = traces_8000
    panel = make(qtbot, t_session, NextTokenPanel)
    t_session.set_trace(first)
    t_session.select(token=ROW)
    asked = []
    t_session.requests.logit_lens_requested.connect(asked.append)
    panel.lens_button.click()
    assert asked == [ROW] and "computing the logit lens" in panel.readout.text()
    other = dataclasses.replace(first, steps=(dataclasses.replace(first.steps[0]),))
    t_session.set_trace(other)                                                     # a new prompt, same position
    t_session.select(token=ROW)
    answer = {"position": ROW, "ids": np.array([[1, 2], [3, 4]]), "probs": np.array([[0.6, 0.3], [0.5, 0.2]])}
    t_session.requests.logit_lens_ready.emit(answer)
    assert not panel.lens_table.isVisibleTo(panel)                               # asked of the first trace
    panel.lens_button.click()
    t_session.requests.logit_lens_ready.emit(answer)                                        # asked of this one: shown
    assert panel.lens_table.isVisibleTo(panel) and panel.lens_table.rowCount() == 2
    t_session.set_trace(dataclasses.replace(other, steps=other.steps + second.steps[1:]))   # a step after it keeps
    t_session.select(token=ROW)                                                    # the prompt's record: still
    assert panel.lens_table.isVisibleTo(panel)                                   # the lens of this position
    t_session.set_trace(second)                                                    # the first prompt's record
    t_session.select(token=ROW)
    assert not panel.lens_table.isVisibleTo(panel)


def test_the_residual_stream_of_another_position_is_not_left_beside_the_one_being_read(qtbot, t_session, traces_8000):
    from explorer.app.panels.residual import ResidualPanel
    from explorer.core.attribution import ResidualStream

    first = traces_8000[0]
    panel = make(qtbot, t_session, ResidualPanel)
    t_session.set_trace(first)
    t_session.select(token=10)
    n = first.model.n_layers
    stream = ResidualStream(position=10, attn_norms=np.ones(n), ffn_norms=np.ones(n), residual_norms=np.arange(n) + 1.0,
                            lens_ids=np.zeros((n, 5), dtype=np.int64), lens_probs=np.full((n, 5), 0.2))
    panel._on_answer((first.model.name, tuple(int(i) for i in first.token_ids[:11])), stream)
    assert panel.table.item(0, 0) is not None and "position 10" in panel.formula
    t_session.select(token=ROW)                                                    # asked; not answered yet
    assert panel.stream is None and panel.table.item(0, 0) is None
    assert f"position {ROW}: reading" in panel.formula
    t_session.select(token=10)                                                     # back: asked again, not
    assert panel.stream is None and "position 10: reading" in panel.formula      # the cleared table's
