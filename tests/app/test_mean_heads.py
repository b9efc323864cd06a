"""The attention panel shows the mean over a layer's heads, Ā = (1/N_Q) Σ_h A_h, on request."""
from __future__ import annotations

import numpy as np

from explorer.app.panels import AttentionPanel
from explorer.app.state.session import Session
from tests.app.shared_window import make
from tests.app.synthetic_trace import build_trace


def test_mean_of_heads_is_the_average_of_every_heads_weights(qtbot):
    session = Session()
    panel = make(qtbot, session, AttentionPanel)
    trace = build_trace(n_layers=3, n_heads=4, prompt_len=6, steps=2)
    session.set_trace(trace)
    session.select(layer=2, head=1)
    panel.mean_box.setChecked(True)
    weights = trace.attention(2)                                   # (heads, q, k), zeros where masked
    expected = weights.mean(axis=0)
    mask = trace.mask(2)
    np.testing.assert_allclose(panel.matrix[mask], expected[mask], rtol=1e-5, atol=1e-6)
    assert np.isnan(panel.matrix[~mask]).all()
    np.testing.assert_allclose(np.nansum(panel.matrix, axis=1), 1.0, atol=1e-5)   # a mean of rows that sum to 1
    header = panel.header.text()
    assert "Ā = (1/N<sub>Q</sub>) Σ<sub>h</sub> A<sub>h</sub>" in header and "4 heads" in header
    assert not panel.head_box.isEnabled()
    panel.mean_box.setChecked(False)
    np.testing.assert_allclose(np.nan_to_num(panel.matrix), weights[1], atol=1e-6)
