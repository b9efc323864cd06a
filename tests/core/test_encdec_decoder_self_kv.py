"""The translator's decoder self-attention K and V, stepped: one row per target token so far.

The explorer decodes one target token a step against a growing cache; each step's record must hold the
keys of its own new token only (AttentionRecord.k), so that the trace's K stacks to T rows. Before the fix
every step recorded the whole cache, and a trace after 3 steps stacked 1+2+3+4 = 10 rows of K for 4 tokens.
The expectation here is independent of the recording: the model's own teacher-forced forward over the
whole target at once (no cache), with W^Q, W^K and W^V's outputs read by forward hooks.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

TRANSLATOR = Path(__file__).resolve().parents[2] / "resources" / "models" / "translate-en-zh"
SOURCE = "The quick brown fox jumps over the lazy"
STEPS = 3


@pytest.fixture(scope="module")
def stepped():
    """(loaded, trace after prefill and STEPS steps)."""
    from explorer.core.drivers import make_decoder
    from explorer.core.runtime import load_model

    loaded = load_model(TRANSLATOR)
    decoder = make_decoder(loaded)
    trace = decoder.prefill(loaded.tokenizer.encode(SOURCE).ids)
    for _ in range(STEPS):
        trace = decoder.step()
    return loaded, trace


def _full_forward_projections(loaded, trace, layer: int) -> dict[str, np.ndarray]:
    """Q, K, V of decoder layer `layer`'s self-attention, (H, T, d_head) each, from one uncached
    teacher-forced forward of the source and the whole target so far."""
    import torch

    model = loaded.model
    attn = model.decoder[layer].self_attn
    seen: dict[str, np.ndarray] = {}

    def keep(name):
        def hook(_module, _inputs, output):               # output: (B, T, d_model)
            b, t, _ = output.shape
            seen[name] = output.view(b, t, attn.n_heads, attn.d_head).transpose(1, 2)[0].float().cpu().numpy()
        return hook

    handles = [proj.register_forward_hook(keep(name)) for name, proj in (("q", attn.wq), ("k", attn.wk),
                                                                         ("v", attn.wv))]
    try:
        device = next(model.parameters()).device
        with torch.inference_mode():
            source = torch.as_tensor(np.asarray(trace.encoder.token_ids), device=device)[None]
            target = torch.as_tensor(np.asarray(trace.token_ids), device=device)[None]
            model(source, target)
    finally:
        for handle in handles:
            handle.remove()
    return seen


def test_stepped_decoder_self_attention_k_and_v_have_one_row_per_target_token(stepped):
    loaded, trace = stepped
    t = trace.n_tokens
    assert t == STEPS + 1                                 # the start token and one token a step
    expected = _full_forward_projections(loaded, trace, 0)
    for kv_head in range(trace.model.n_kv_heads):
        k, v = trace.k(0, kv_head), trace.v(0, kv_head)
        assert k.shape == (t, trace.model.d_qk) and v.shape[0] == t
        assert np.allclose(k, expected["k"][kv_head], atol=1e-4)
        assert np.allclose(v, expected["v"][kv_head], atol=1e-4)
        assert np.allclose(trace.q(0, kv_head), expected["q"][kv_head], atol=1e-4)


def test_softmax_of_the_stepped_q_and_k_is_the_recorded_attention(stepped):
    _, trace = stepped
    t = trace.n_tokens
    causal = np.tril(np.ones((t, t), dtype=bool))
    for layer in range(trace.model.n_layers):
        recorded = trace.attention(layer)                 # (N_Q, T, T), the weights the model computed
        assert recorded.shape[1:] == (t, t)
        for head in range(trace.model.n_heads):
            q, k = trace.q(layer, head).astype(np.float64), trace.k(layer, trace.kv_head_of(head)).astype(np.float64)
            scale = trace.steps[-1].layers[layer].attn.scale
            s = np.where(causal, q @ k.T * scale, -np.inf)
            a = np.exp(s - s.max(axis=1, keepdims=True))
            a /= a.sum(axis=1, keepdims=True)
            assert np.allclose(a, recorded[head], atol=1e-4)
            assert np.allclose(trace.scores(layer, head)[causal], s[causal], atol=1e-3)
