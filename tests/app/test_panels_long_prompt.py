"""The views at 8,000 tokens (issue 16): the mask is drawn from each step's rule as block maxima over its real
extent, a decoding step's redraw makes no T x T array in any panel, and the token text is not laid out again
when a step leaves its window as it was. The trace comes from a tiny random Llama, its maps on demand."""
from __future__ import annotations

import math
import tracemalloc

import numpy as np
import pytest

from explorer.app.panels import EmbeddingsPanel, KVCachePanel, MaskPanel, NextTokenPanel, QKVPanel, TokensPanel
from explorer.app.panels.mask import ALLOWED, NEW_ROW
from explorer.core.attention_maps import MaskRule
from explorer.core.trace import AttentionRecord, Trace
from tests.app.long_prompt import N_PANELS
from tests.app.shared_window import make

N = N_PANELS
T_BY_T_BOOL = N * N                     # bytes of one T x T bool array: what no step's redraw may allocate


@pytest.fixture
def no_dense_maps(monkeypatch):
    """Every way to a T x T mask or map raises: the views must draw from the rule and the rows."""
    def refuse(*args, **kwargs):
        raise AssertionError("a view asked for a dense T x T array")

    for owner, name in ((Trace, "mask"), (Trace, "attention"), (Trace, "attention_head"), (Trace, "scores"),
                        (MaskRule, "__array__"), (AttentionRecord, "weights_of")):
        monkeypatch.setattr(owner, name, refuse)


def causal_blocks(t: int, f: int, new_row: bool) -> np.ndarray:
    """Block maxima of the causal mask M_ij = [j <= i] over t x t cells, by the definition: block (I, J) holds an
    allowed cell iff its first column J f is at most its last row; the last row (a step's) is NEW_ROW."""
    n = math.ceil(t / f)
    last_row = np.minimum((np.arange(n) + 1) * f, t) - 1                    # (n,)
    expected = (np.arange(n)[None, :] * f <= last_row[:, None]).astype(np.float32) * ALLOWED
    if new_row:
        expected[(t - 1) // f, :] = NEW_ROW                                  # the step's row sees every key
    return expected


def test_the_mask_is_drawn_from_its_rule_as_block_maxima_over_the_real_extent(qtbot, t_session, traces_8000,
                                                                              no_dense_maps):
    first, _, last = traces_8000
    assert isinstance(first.steps[0].layers[0].attn.mask, MaskRule)
    mask = make(qtbot, t_session, MaskPanel)
    t_session.set_trace(first)
    f = mask.factor
    assert f > 1 and max(mask.mask.shape) <= 1024
    np.testing.assert_array_equal(mask.mask, causal_blocks(N, f, new_row=False))
    assert not mask.new_rows_box.isVisible()                                  # a prefill adds no new row
    t_session.set_trace(last)
    t = N + 2
    assert mask.extent == (t, t) and mask.heatmap.shape == (t, t)
    np.testing.assert_array_equal(mask.mask, causal_blocks(t, mask.factor, new_row=True))
    rect = mask.heatmap.image.mapRectToParent(mask.heatmap.image.boundingRect())
    assert (rect.width(), rect.height()) == (t, t)                            # the axes count tokens
    assert f"{t}×{t}" in mask.formula
    box = mask.new_rows_box.rect()                                            # the step's row, outlined
    assert mask.new_rows_box.isVisible() and (box.top(), box.height(), box.width()) == (t - 1.5, 1, t)
    for row, col in ((5000, 4999), (5000, 5001), (t - 1, 0), (0, t - 1)):
        mask._hover(row, col)                                                 # the exact cell, not its block's
        assert ("may attend" if col <= row else "is masked from") in mask.readout.text()


def test_a_step_at_8000_tokens_redraws_every_panel_without_a_t_by_t_array(qtbot, t_session, traces_8000, no_dense_maps):
    first, second, _ = traces_8000
    panels = [make(qtbot, t_session, cls) for cls in (TokensPanel, EmbeddingsPanel, QKVPanel, MaskPanel,
                                                    KVCachePanel, NextTokenPanel)]
    t_session.set_trace(first)
    qtbot.wait(10)
    tracemalloc.start()
    try:
        t_session.set_trace(second)
        for panel in panels:
            panel.repaint()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < T_BY_T_BOOL, f"a step's redraw allocated {peak / 1e6:.0f} MB"
    tokens, embeddings, qkv, mask = panels[:4]
    assert tokens.table.rowCount() == N + 1
    assert embeddings.matrix.shape == (N + 1, first.model.d_model)
    norms = np.linalg.norm(np.concatenate([s.embeddings for s in second.steps]), axis=1)     # (N + 1,)
    widths = np.asarray(embeddings.norm_bars.opts["width"])
    f = math.ceil((N + 1) / len(widths))
    assert len(widths) <= 256
    assert widths[0] == pytest.approx(norms[:f].max()) and widths.max() == pytest.approx(norms.max())
    assert all(m.shape[0] == N + 1 for name, m in qkv.matrices.items())
    assert mask.extent == (N + 1, N + 1)
    for panel in panels:
        assert panel.drawn_trace_id == t_session.trace_id


def test_a_step_that_leaves_the_token_window_as_it_was_lays_no_text_out_again(qtbot, t_session, traces_8000,
                                                                              monkeypatch):
    first, second, _ = traces_8000
    tokens = make(qtbot, t_session, TokensPanel)
    t_session.set_trace(first)
    laid_out = []
    original = tokens.text_view.setHtml
    monkeypatch.setattr(tokens.text_view, "setHtml", lambda html: laid_out.append(html) or original(html))
    t_session.set_trace(second)                              # the window shows tokens 0..1,499, as before
    assert laid_out == [] and tokens.table.rowCount() == N + 1
    t_session.select(token=N)                                # the new token: the window moves to it
    assert len(laid_out) == 1 and "tok:8000" in laid_out[0]


def dense_block_maxima(trace, layer: int, step, side: int) -> np.ndarray:
    """The reference: the dense mask the trace assembles, its step's rows marked NEW_ROW, then f x f block maxima."""
    dense = np.asarray(trace.mask(layer, step), dtype=np.float32)
    index = trace.n_steps - 1 if step is None else step
    if index > 0:
        new = trace.steps[index].n_new
        dense[-new:][dense[-new:] > 0] = NEW_ROW
    f = max(1, math.ceil(max(dense.shape) / side))
    rows, cols = math.ceil(dense.shape[0] / f), math.ceil(dense.shape[1] / f)
    padded = np.zeros((rows * f, cols * f), dtype=np.float32)
    padded[: dense.shape[0], : dense.shape[1]] = dense
    return padded.reshape(rows, f, cols, f).max(axis=(1, 3))


def as_rules(trace):
    """The same trace with every mask kept as its rule, as the engine records a long prompt: each
    layer's rule made from the step's query positions, its keys and its kind, and checked to be the
    very mask it stands in for."""
    import dataclasses

    def ruled(layer, kind, queries):
        attn = layer.attn
        keys = np.asarray(attn.kv_positions)
        rule = MaskRule.of(queries, keys, trace.model.sliding_window if kind == "sliding" else None,
                           causal=kind != "full")
        np.testing.assert_array_equal(np.asarray(rule), np.asarray(attn.mask))
        return dataclasses.replace(layer, attn=dataclasses.replace(attn, mask=rule))

    kinds = trace.model.layer_kinds
    steps = tuple(dataclasses.replace(s, layers=tuple(ruled(layer, kinds[i], s.positions)
                                                      for i, layer in enumerate(s.layers)))
                  for s in trace.steps)
    return dataclasses.replace(trace, steps=steps)


@pytest.mark.parametrize("window", [None, 3])
@pytest.mark.parametrize("rules", [False, True])
def test_mask_blocks_are_the_block_maxima_of_the_dense_mask(window, rules):
    from explorer.views.mask_blocks import mask_allowed, mask_blocks
    from tests.app.synthetic_trace import build_trace

    trace = build_trace(n_layers=2, prompt_len=23, steps=9, sliding_window=window, max_positions=64)
    trace = as_rules(trace) if rules else trace
    assert isinstance(trace.steps[0].layers[0].attn.mask, MaskRule) == rules
    for layer in range(2):
        for step in (None, 0, 4):
            for side in (1000, 7, 5, 3):
                picture = mask_blocks(trace, layer, step, side=side)
                np.testing.assert_array_equal(picture.blocks, dense_block_maxima(trace, layer, step, side))
            dense = np.asarray(trace.mask(layer, step))
            assert all(mask_allowed(trace, layer, i, j, step) == dense[i, j]
                       for i in range(dense.shape[0]) for j in range(dense.shape[1]))
