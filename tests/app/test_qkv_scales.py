"""Q, K and V each have their own colour scale: a V ten times smaller than Q is not drawn blank."""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from explorer.app.panels import QKVPanel
from explorer.app.state.session import Session
from tests.app.shared_window import make
from tests.app.synthetic_trace import build_trace


def test_each_matrix_is_scaled_to_its_own_largest_value(qtbot):
    session = Session()
    qkv = make(qtbot, session, QKVPanel)
    trace = build_trace(n_heads=4, prompt_len=6)
    step = trace.steps[0]
    layer = step.layers[0]
    small_v = replace(layer.attn, v=layer.attn.v * 0.01)                    # V a hundred times smaller
    trace = replace(trace, steps=(replace(step, layers=(replace(layer, attn=small_v),) + step.layers[1:]),))
    session.set_trace(trace)
    for name, heatmap in qkv.heatmaps.items():
        top = float(np.abs(qkv.matrices[name]).max())
        assert heatmap.image.levels[0] == -top and heatmap.image.levels[1] == top, name
        assert heatmap.colorbar is not None, f"{name} has no colour bar of its own"
    v_name = next(name for name in qkv.heatmaps if name.startswith("V"))
    v = qkv.heatmaps[v_name]
    # Its strongest cell is drawn at the end of the colour map, not in the middle (blank) of it.
    row, col = np.unravel_index(np.argmax(np.abs(qkv.matrices[v_name])), qkv.matrices[v_name].shape)
    colour = v.pixel_color(int(row), int(col))
    middle = v.colormap.map(0.5, mode="qcolor")
    assert abs(colour.lightness() - middle.lightness()) > 60
