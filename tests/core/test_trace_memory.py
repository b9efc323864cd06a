"""A long prefill's trace keeps Q, K and V only, and every value read from it is still exact.

At 2,000 tokens on a tiny Llama (GQA, Llama 3 RoPE) the trace's bytes follow the documented formula
(docs/benchmarks.md, "Trace memory at 8,000 tokens"), counted here from the Hugging Face config, and
what the views and the API read from the trace (Q, K, V before and after RoPE, A, O_h, the mask,
||h||, and X = Norm(h) computed again on demand) equals transformers with its own hooks and the full
recording (every array stored).
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

from explorer.core import activations
from explorer.core.decode import Decoder, RecordOptions
from explorer.core.runtime import from_tensors
from tests.core.conftest import VOCAB, make_hf_model

T = 2000          # T^2 is past the long-prompt threshold: the maps are rebuilt on demand
TOP_K = 10


@pytest.fixture(scope="module")
def tiny():
    hf = make_hf_model("llama")
    config = dict(hf.config.to_dict(), max_position_embeddings=T + 8)
    loaded = from_tensors(config, hf.state_dict(), name="tiny-llama")
    ids = np.random.default_rng(5).integers(0, VOCAB, T)
    return hf, loaded, ids


def kept_bytes(config: dict, n_tokens: int, itemsize: int, top_k: int) -> int:
    """bytes = T (b d [E rows] + L (b (N_Q d_head [Q] + N_KV 2 d_head [K, V]) + 4 [||h||, float32])
    + 8 [id] + 8 [position] + 16 [the causal mask rule's query and key positions, int64])
    + k (8 + 4) [the next-token candidates after the last position]."""
    d, n_layers = config["hidden_size"], config["num_hidden_layers"]
    n_q, n_kv = config["num_attention_heads"], config["num_key_value_heads"]
    d_head = config.get("head_dim") or d // n_q
    per_layer = itemsize * (n_q * d_head + n_kv * 2 * d_head) + 4
    return n_tokens * (itemsize * d + n_layers * per_layer + 8 + 8 + 16) + top_k * (8 + 4)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_a_long_prefill_keeps_the_bytes_of_the_formula(tiny, dtype):
    hf, loaded, ids = tiny
    trace = Decoder(loaded, RecordOptions(dtype=dtype, top_k=TOP_K), capacity=T + 1).prefill(ids)
    itemsize = np.dtype(dtype).itemsize
    assert trace.nbytes() == kept_bytes(hf.config.to_dict(), T, itemsize, TOP_K)
    assert all(layer.x is None for layer in trace.steps[0].layers)


def test_a_long_prefill_holds_no_layer_s_t_by_d_rows_but_q_k_v_until_it_is_recorded(tiny, monkeypatch):
    """The peak of a long prefill: each finished layer keeps Q, K, V and ||h||, not X or h (T, d) each."""
    from explorer.core import decode, recording

    hf, loaded, ids = tiny
    seen = []
    monkeypatch.setattr(decode, "layer_records", lambda captured, *a, **k: seen.append(list(captured)) or
                        recording.layer_records(captured, *a, **k))
    trace = Decoder(loaded, RecordOptions(top_k=TOP_K), capacity=T + 1).prefill(ids)
    (captured,) = seen
    norms = [np.linalg.norm(h, axis=-1) for h in _reference(hf, ids)["h"].values()]
    for layer, held in enumerate(captured):
        rows = {name: getattr(held, name) for name in ("x", "residual_in", "attn_out", "ffn_out", "residual")}
        assert all(value is None for value in rows.values()), [name for name, v in rows.items() if v is not None]
        np.testing.assert_allclose(held.residual_norm.numpy(), norms[layer], rtol=1e-4)
        np.testing.assert_array_equal(trace.steps[0].layers[layer].residual_norm, held.residual_norm.numpy())


def test_a_short_prompt_still_keeps_its_block_inputs(tiny):
    hf, loaded, ids = tiny
    trace = Decoder(loaded, RecordOptions(top_k=TOP_K), capacity=T + 1).prefill(ids[:16])
    expected = _reference(hf, ids[:16])["x"]
    for layer, record in enumerate(trace.steps[0].layers):
        np.testing.assert_allclose(record.x, expected[layer], rtol=1e-4, atol=1e-5)


def _reference(hf, ids: np.ndarray) -> dict:
    """transformers' own numbers, by hooks: per layer X (the input norm's output), Q, K, V before RoPE, the
    head outputs O (o_proj's input), the block's output h, and the attention maps A."""
    seen: dict[str, dict[int, torch.Tensor]] = {name: {} for name in ("x", "q", "k", "v", "o", "h")}
    handles = []
    for i, block in enumerate(hf.model.layers):
        def keep(name, i=i):
            return lambda module, args, out: seen[name].__setitem__(i, (out[0] if isinstance(out, tuple) else out)[0])
        handles += [block.input_layernorm.register_forward_hook(keep("x")), block.register_forward_hook(keep("h")),
                    block.self_attn.q_proj.register_forward_hook(keep("q")),
                    block.self_attn.k_proj.register_forward_hook(keep("k")),
                    block.self_attn.v_proj.register_forward_hook(keep("v")),
                    block.self_attn.o_proj.register_forward_pre_hook(
                        lambda module, args, i=i: seen["o"].__setitem__(i, args[0][0]))]
    try:
        with torch.inference_mode():
            out = hf(torch.as_tensor(ids)[None], output_attentions=True)
    finally:
        for handle in handles:
            handle.remove()
    result = {name: {i: t.float().numpy() for i, t in values.items()} for name, values in seen.items()}
    result["attention"] = [a[0].float().numpy() for a in out.attentions]                 # (H, T, T) per layer
    return result


def _heads(rows: np.ndarray, n: int) -> np.ndarray:
    return rows.reshape(rows.shape[0], n, -1).transpose(1, 0, 2)                          # (T, n d) -> (n, T, d)


def test_what_the_views_and_the_api_read_equals_transformers_and_the_full_recording(tiny):
    hf, loaded, ids = tiny
    trace = Decoder(loaded, RecordOptions(top_k=TOP_K), capacity=T + 1).prefill(ids)
    full = Decoder(loaded, RecordOptions(top_k=TOP_K, head_out=True, pre_rope=True, attention="stored"),
                   capacity=T + 1).prefill(ids)
    reference = _reference(hf, ids)
    info = trace.model
    n_layers = info.n_layers
    again = activations.compute(loaded, ids, {layer: {"attn_in"} for layer in range(n_layers)})
    causal = np.tril(np.ones((T, T), dtype=bool))
    np.testing.assert_array_equal(trace.mask(0), causal)
    for layer in range(n_layers):
        x = again[layer, "attn_in"]                                                       # X, computed again
        np.testing.assert_allclose(x, reference["x"][layer], rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(x, full.steps[0].layers[layer].x, rtol=1e-4, atol=1e-5)
        norms = np.linalg.norm(reference["h"][layer], axis=-1)
        np.testing.assert_allclose(trace.steps[0].layers[layer].residual_norm, norms, rtol=1e-4)
        q, k, v = (_heads(reference[name][layer], n) for name, n in
                   (("q", info.n_heads), ("k", info.n_kv_heads), ("v", info.n_kv_heads)))
        o = _heads(reference["o"][layer], info.n_heads)
        for kv_head in range(info.n_kv_heads):
            np.testing.assert_allclose(trace.k_pre_rope(layer, kv_head), k[kv_head], rtol=1e-4, atol=1e-5)
            np.testing.assert_allclose(trace.v(layer, kv_head), v[kv_head], rtol=1e-4, atol=1e-5)
            np.testing.assert_allclose(trace.k(layer, kv_head), full.k(layer, kv_head), rtol=1e-4, atol=1e-5)
        for head in range(info.n_heads):
            np.testing.assert_allclose(trace.q_pre_rope(layer, head), q[head], rtol=1e-4, atol=1e-5)
            np.testing.assert_allclose(trace.q(layer, head), full.q(layer, head), rtol=1e-4, atol=1e-5)
            np.testing.assert_allclose(trace.attention_head(layer, head), reference["attention"][layer][head],
                                       atol=1e-5)
            np.testing.assert_allclose(trace.attention_row(layer, head, T - 1),
                                       reference["attention"][layer][head][T - 1], atol=1e-5)
            np.testing.assert_allclose(trace.head_out(layer, head), o[head], rtol=1e-4, atol=1e-5)
            np.testing.assert_allclose(trace.head_out(layer, head), full.head_out(layer, head), atol=1e-5)
