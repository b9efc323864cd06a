"""The Q / K / V panel on the translator's masked decoder self-attention after a few steps: Q, K and V
each have one row per target token so far (T), drawn as T heat-map rows with T labels, and K is the
trace's K (before the fix, K and V stacked every step's whole cache: 1+2+3+4 = 10 rows for 4 tokens)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from explorer.app.panels import QKVPanel
from explorer.app.state.session import Session
from tests.app.shared_window import make

TRANSLATOR = Path(__file__).resolve().parents[2] / "resources" / "models" / "translate-en-zh"
SOURCE = "The quick brown fox jumps over the lazy"


@pytest.fixture(scope="module")
def traces():
    """The translator's trace after its prefill and after each of three steps."""
    from explorer.core.drivers import make_decoder
    from explorer.core.runtime import load_model

    loaded = load_model(TRANSLATOR)
    decoder = make_decoder(loaded)
    out = [decoder.prefill(loaded.tokenizer.encode(SOURCE).ids)]
    for _ in range(3):
        out.append(decoder.step())
    return out


def test_decoder_self_attention_qkv_has_one_row_per_target_token_at_every_step(qtbot, traces):
    session = Session()
    qkv = make(qtbot, session, QKVPanel)
    for trace in traces:                                  # stepped as a person steps: each trace after the last
        session.set_trace(trace)
        session.select(attention="self", layer=0, head=0)
        t, d = trace.n_tokens, trace.model.d_qk
        assert {name: m.shape for name, m in qkv.matrices.items()} == {"Q_0": (t, d), "K_0": (t, d), "V_0": (t, d)}
        # the rows drawn are the keys the attention map's columns are (the map is T x T)
        assert trace.attention(0)[0].shape == (t, t)
        for name in ("Q_0", "K_0", "V_0"):
            assert qkv.heatmaps[name].shape == (t, d)
            assert len(qkv.row_text[name]) == t
        assert np.allclose(qkv.matrices["K_0"], trace.k(0, 0), atol=1e-6)
        assert np.allclose(qkv.matrices["V_0"], trace.v(0, 0), atol=1e-6)
        for name in ("Q", "K", "V"):                      # the title's shapes: ℝ^{T×d}
            assert f"{name}_0 = X W_0^{name} ∈ ℝ^{{{t}×{d}}}" in qkv.formula
