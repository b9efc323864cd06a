"""The KV cache panel at an 8,000-token trace: a decoding step gives the plots' same items new data (nothing
is cleared and built again), the token axis carries a handful of labels however long the trace, and what
the plots draw is the cache's bytes by the formula, 2 · N_KV · d_h · 4 bytes per token per layer at float32.

The trace is a small synthetic one whose prefill is made to hold PREFILL tokens: the panel reads only the
steps' token counts and the layers' cache bytes, so its 8,000 tokens cost no attention arrays."""
from __future__ import annotations

import dataclasses

import numpy as np

from explorer.app.panels import KVCachePanel
from explorer.app.state.session import Session
from tests.app.synthetic_trace import build_trace

N_LAYERS, N_HEADS, N_KV, D_HEAD = 30, 9, 3, 64          # SmolLM2-135M's cache
CAPACITY = 8192
PREFILL, STEPS = 7992, 8
PER_TOKEN_PER_LAYER = 2 * N_KV * D_HEAD * 4              # K and V: N_KV heads of d_h float32 numbers each
MOST_TOKEN_LABELS = 12


def long_trace(steps: int):
    """A prefill of PREFILL tokens and `steps` decoding steps; every layer holds every token, its cache
    preallocated to CAPACITY tokens."""
    small = build_trace(n_layers=N_LAYERS, n_heads=N_HEADS, n_kv_heads=N_KV, d_head=D_HEAD, prompt_len=4,
                        steps=steps, max_positions=CAPACITY)
    records = []
    for index, step in enumerate(small.steps):
        held = PREFILL + index
        n_new = PREFILL if index == 0 else 1
        layers = tuple(dataclasses.replace(layer, kv_bytes_in_use=held * PER_TOKEN_PER_LAYER,
                                           kv_bytes_allocated=CAPACITY * PER_TOKEN_PER_LAYER)
                       for layer in step.layers)
        records.append(dataclasses.replace(step, layers=layers, token_ids=np.zeros(n_new, dtype=np.int64),
                                           positions=np.arange(held - n_new, held), token_text=("a",) * n_new))
    return dataclasses.replace(small, steps=tuple(records))


def shown_panel(qtbot):
    session = Session()
    panel = KVCachePanel(session)
    qtbot.addWidget(panel)
    panel.resize(1200, 420)
    panel.show()
    return session, panel


def token_labels(panel) -> list[float]:
    axis = panel.total_plot.getAxis("bottom")
    low, high = panel.total_plot.getViewBox().viewRange()[0]
    return [value for _, values in axis.tickValues(low, high, axis.width()) for value in values]


def test_a_step_at_a_long_trace_updates_the_same_items(qtbot):
    session, panel = shown_panel(qtbot)
    trace = long_trace(STEPS)
    session.set_trace(dataclasses.replace(trace, steps=trace.steps[:1]))
    items = panel.layer_plot.items + panel.total_plot.items
    for steps in range(2, STEPS + 2):
        session.set_trace(dataclasses.replace(trace, steps=trace.steps[:steps]))
        now = panel.layer_plot.items + panel.total_plot.items
        assert len(now) == len(items) and all(a is b for a, b in zip(now, items)), \
            f"step {steps - 1}: the plots' items were built again"


def test_the_token_axis_has_a_handful_of_whole_labels_at_a_long_trace(qtbot):
    session, panel = shown_panel(qtbot)
    session.set_trace(long_trace(STEPS))      # the steps span 8 tokens, the axis 0 to 8,000
    labels = token_labels(panel)
    assert 2 <= len(labels) <= MOST_TOKEN_LABELS, f"{len(labels)} labels on the token axis"
    assert all(float(value).is_integer() for value in labels), labels


def test_the_long_trace_draws_the_cache_bytes_by_formula(qtbot):
    session, panel = shown_panel(qtbot)
    trace = long_trace(STEPS)
    session.set_trace(trace)
    tokens = PREFILL + np.arange(STEPS + 1)                          # held after the prefill and each step
    assert list(panel.held) == [tokens[-1]] * N_LAYERS
    assert panel.total_in_use == N_LAYERS * tokens[-1] * PER_TOKEN_PER_LAYER
    assert panel.total_allocated == N_LAYERS * CAPACITY * PER_TOKEN_PER_LAYER
    curve = panel.plots.total_curve
    np.testing.assert_array_equal(curve.xData, tokens)
    np.testing.assert_allclose(curve.yData, N_LAYERS * tokens * PER_TOKEN_PER_LAYER / 1024.0)
    np.testing.assert_allclose(panel.plots.in_use_bars.opts["height"],
                               [tokens[-1] * PER_TOKEN_PER_LAYER / 1024.0] * N_LAYERS)
    assert panel.step_line.value() == tokens[-1]
    blocks = N_LAYERS * -(-tokens[-1] // panel.block_box.value())
    assert panel.paging_label.text().startswith(f"{blocks} blocks"), panel.paging_label.text()
    session.select(step=3)                                           # an earlier step, read from its record
    assert panel.total_in_use == N_LAYERS * tokens[3] * PER_TOKEN_PER_LAYER
    np.testing.assert_allclose(panel.plots.step_dot.yData, [N_LAYERS * tokens[3] * PER_TOKEN_PER_LAYER / 1024.0])
    assert panel.step_line.value() == tokens[3]
