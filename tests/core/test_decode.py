"""Decoding with the KV cache: cached steps equal one uncached forward; back, force, sampling, bytes."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from explorer.core.capture import StepCapture
from explorer.core.decode import Decoder, RecordOptions
from explorer.core.errors import ContextOverflowError, ExplorerError
from explorer.core.sampling import Sampling, distribution

PROMPT = np.array([5, 17, 42, 8, 63, 21], dtype=np.int64)
STEPS = 9   # 15 tokens in all: past every sliding window (5) of the fixtures


def _decode(loaded, steps=STEPS, **kwargs) -> Decoder:
    decoder = Decoder(loaded, **kwargs)
    decoder.prefill(PROMPT)
    for _ in range(steps):
        decoder.step()
    return decoder


def _uncached(loaded, ids):
    capture = StepCapture(loaded.config.n_layers)
    with torch.inference_mode():
        hidden = loaded.model(torch.as_tensor(ids), np.arange(len(ids)), None, capture)
        logits = loaded.model.logits(hidden)
    return logits.numpy(), [layer.attn.weights.numpy() for layer in capture.layers]


def test_cached_decode_equals_uncached_forward(loaded):
    decoder = _decode(loaded, capacity=4)     # a small capacity also makes the caches grow
    ids = decoder.trace.token_ids
    logits, weights = _uncached(loaded, ids)
    scale = np.abs(logits).max()
    for position in range(len(ids)):
        assert np.abs(decoder.logits_at(position) - logits[position]).max() / scale < 1e-5
    for layer in range(loaded.config.n_layers):
        np.testing.assert_allclose(decoder.trace.attention(layer), weights[layer], atol=1e-5)


def test_rows_sum_to_one_and_masked_entries_are_exactly_zero(loaded):
    trace = _decode(loaded).trace
    window = loaded.config.sliding_window
    for layer, kind in enumerate(loaded.config.layer_kinds):
        weights, mask = trace.attention(layer), trace.mask(layer)
        t = weights.shape[1]
        query, key = np.arange(t)[:, None], np.arange(t)[None, :]
        allowed = key <= query
        if kind == "sliding":
            allowed &= key > query - window
        np.testing.assert_array_equal(mask, allowed)
        assert np.all(weights[:, ~allowed] == 0.0)
        np.testing.assert_allclose(weights.sum(-1), 1.0, atol=1e-5)


def test_records_have_the_contract_shapes(loaded):
    decoder = _decode(loaded, steps=2, record=RecordOptions(head_out=True, pre_rope=True))
    config, step = loaded.config, decoder.trace.steps[-1]
    attn = step.layers[0].attn
    n_kv_heads = config.n_heads if config.mla else config.n_kv_heads
    assert attn.q.shape == (config.n_heads, 1, config.d_qk)
    assert attn.k.shape == (n_kv_heads, 1, config.d_qk) and attn.v.shape == (n_kv_heads, 1, config.d_v)
    assert attn.weights.shape == (config.n_heads, 1, attn.n_kv) == (config.n_heads, 1, len(attn.kv_positions))
    assert attn.head_out.shape == (config.n_heads, 1, config.d_v)
    assert step.embeddings.shape == (1, config.d_model) and step.layers[0].x.shape == (1, config.d_model)
    assert step.top_ids.shape == step.top_probs.shape == (1, 10)
    assert (attn.q_pre_rope is None) == (config.positional != "rope")
    assert (attn.latent is not None) == config.mla
    np.testing.assert_array_equal(step.embeddings[0], loaded.model.embed.weight[step.token_ids[0]].numpy())


def test_back_shrinks_the_cache_and_replays_the_same_step(loaded):
    decoder = _decode(loaded)
    before = decoder.trace
    used = decoder.kv_cache.bytes_in_use()
    for _ in range(4):
        decoder.back()
    assert decoder.kv_cache.length == len(PROMPT) + STEPS - 4
    now = decoder.kv_cache.bytes_in_use()
    for layer, kind in enumerate(loaded.config.layer_kinds):
        assert now[layer] < used[layer] if kind == "causal" else now[layer] <= used[layer]
    for _ in range(4):
        decoder.step()
    np.testing.assert_array_equal(decoder.trace.token_ids, before.token_ids)
    for layer in range(loaded.config.n_layers):
        np.testing.assert_allclose(decoder.trace.attention(layer), before.attention(layer), atol=1e-6)
    assert decoder.back().n_steps == before.n_steps - 1


def test_back_never_drops_the_prompt(loaded):
    decoder = Decoder(loaded)
    trace = decoder.prefill(PROMPT)
    assert decoder.back() is trace and decoder.kv_cache.length == len(PROMPT)


def test_force_branches_the_sequence(loaded):
    decoder = _decode(loaded, steps=2)
    greedy_next = decoder.trace.steps[-1].chosen_id
    forced = (greedy_next + 1) % loaded.config.vocab_size
    trace = decoder.force(forced)
    assert trace.steps[-1].forced and trace.steps[-1].chosen_id == forced
    trace = decoder.step()
    assert trace.token_ids[-1] == forced
    logits, _ = _uncached(loaded, trace.token_ids)
    assert np.abs(decoder.logits_at(trace.n_tokens - 1) - logits[-1]).max() < 1e-4 * np.abs(logits).max()
    with pytest.raises(ExplorerError):
        decoder.force(loaded.config.vocab_size)


@pytest.mark.parametrize("family", ["llama"])
def test_seeded_sampling_is_reproducible(loaded):
    sampling = Sampling(temperature=1.5, top_k=20, top_p=0.9, seed=7)
    first = _decode(loaded, sampling=sampling).trace.token_ids
    again = _decode(loaded, sampling=sampling).trace.token_ids
    other = _decode(loaded, sampling=Sampling(temperature=1.5, seed=8)).trace.token_ids
    greedy = _decode(loaded).trace.token_ids
    np.testing.assert_array_equal(first, again)
    assert not np.array_equal(first, other) or not np.array_equal(first, greedy)
    np.testing.assert_array_equal(_decode(loaded, sampling=Sampling(temperature=1.0, top_k=1)).trace.token_ids, greedy)


def test_top_k_and_top_p_truncate_the_distribution():
    logits = torch.tensor([4.0, 3.0, 2.0, 1.0, 0.0])
    assert np.count_nonzero(distribution(logits, Sampling(temperature=1.0, top_k=2))) == 2
    probs = torch.softmax(logits, 0).numpy()
    p = distribution(logits, Sampling(temperature=1.0, top_p=float(probs[0] + 0.01)))
    assert np.count_nonzero(p) == 2 and abs(p.sum() - 1) < 1e-12
    assert np.count_nonzero(distribution(logits, Sampling(temperature=1.0, top_p=0.01))) == 1
    with pytest.raises(ExplorerError):
        Sampling(temperature=-1.0)


@pytest.mark.parametrize("family", ["llama", "mistral", "deepseek_v3"])
def test_kv_bytes_follow_the_cache_kind(loaded):
    config = loaded.config
    decoder = _decode(loaded, capacity=64)
    layer = decoder.trace.steps[-1].layers[0]
    tokens = len(PROMPT) + STEPS
    if config.mla:
        per_token = (config.kv_lora_rank + config.qk_rope_dim) * 4
    else:
        per_token = 2 * config.n_kv_heads * config.d_head * 4
    held = min(tokens, config.sliding_window) if config.layer_kinds[0] == "sliding" else tokens
    assert layer.kv_bytes_in_use == held * per_token
    assert layer.kv_bytes_allocated >= layer.kv_bytes_in_use
    assert decoder.trace.steps[0].layers[0].kv_bytes_in_use == min(len(PROMPT), held) * per_token


@pytest.mark.parametrize("family", ["qwen3"])
def test_float16_recording(loaded):
    trace = _decode(loaded, steps=2, record=RecordOptions(dtype="float16")).trace
    attn = trace.steps[-1].layers[1].attn
    assert attn.q.dtype == attn.weights.dtype == trace.steps[-1].layers[1].x.dtype == np.float16
    full = _decode(loaded, steps=2).trace
    np.testing.assert_allclose(trace.attention(1), full.attention(1), atol=2e-3)
    assert trace.nbytes() < full.nbytes()


@pytest.mark.parametrize("family", ["gpt2"])
def test_context_overflow_is_a_user_error(loaded):
    decoder = Decoder(loaded)
    with pytest.raises(ContextOverflowError):
        decoder.prefill(np.zeros(loaded.config.max_positions + 1, dtype=np.int64))
    decoder.prefill(np.zeros(loaded.config.max_positions, dtype=np.int64))
    with pytest.raises(ContextOverflowError):
        decoder.step()


@pytest.mark.parametrize("family", ["llama"])
def test_candidates_are_recorded_after_each_step_and_computed_for_prompt_positions(loaded):
    decoder = _decode(loaded, steps=2)
    trace = decoder.trace
    logits, _ = _uncached(loaded, trace.token_ids)
    probs = torch.softmax(torch.from_numpy(logits), dim=-1).numpy()
    last_of_steps = {int(step.positions[-1]) for step in trace.steps}
    for position in range(trace.n_tokens):
        ids, p = decoder.candidates_at(position)
        expected = np.argsort(-probs[position])[:10]
        np.testing.assert_array_equal(ids[:3], expected[:3])
        np.testing.assert_allclose(p, probs[position][ids], atol=1e-5)
        recorded = trace.candidates(position)
        assert (recorded is not None) == (position in last_of_steps)
        if recorded is not None:
            np.testing.assert_array_equal(recorded[0], ids)
            np.testing.assert_allclose(recorded[1], p, atol=1e-6)


def test_logit_lens_ends_at_the_model_output(loaded):
    decoder = _decode(loaded, steps=2)
    ids, probs = decoder.logit_lens(4, k=3)
    assert ids.shape == probs.shape == (loaded.config.n_layers, 3)
    expected = np.argsort(-decoder.logits_at(4))[:3]
    np.testing.assert_array_equal(ids[-1], expected)


@pytest.mark.parametrize("family", ["llama"])
def test_compact_recording_leaves_out_what_can_be_derived(loaded):
    compact = _decode(loaded, steps=3, record=RecordOptions(dtype="float16")).trace
    full = _decode(loaded, steps=3, record=RecordOptions(dtype="float16", head_out=True, pre_rope=True)).trace
    attn = compact.steps[-1].layers[0].attn
    assert attn.head_out is None and attn.q_pre_rope is None and attn.k_pre_rope is None
    assert compact.nbytes() < full.nbytes()
    full_attn = full.steps[-1].layers[0].attn
    values = np.stack([full.v(0, full.kv_head_of(h)) for h in range(loaded.config.n_heads)])  # (H, T, d_v)
    derived = np.einsum("hqk,hkd->hqd", attn.weights.astype(np.float32), values.astype(np.float32))
    np.testing.assert_allclose(derived, full_attn.head_out.astype(np.float32), atol=5e-3)


@pytest.mark.parametrize("family", ["llama"])
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_half_precision_models_decode_and_record_numpy(hf_model, dtype):
    from explorer.core.runtime import from_tensors

    half = from_tensors(hf_model.config.to_dict(), hf_model.state_dict(), dtype=dtype)
    reference = from_tensors(hf_model.config.to_dict(), hf_model.state_dict())
    trace = _decode(half, steps=3).trace
    assert half.info.dtype == dtype and trace.steps[-1].layers[0].attn.q.dtype == np.float32
    prefill = trace.steps[0].layers[0].attn.weights
    expected = _decode(reference, steps=0).trace.steps[0].layers[0].attn.weights
    np.testing.assert_allclose(prefill, expected, atol=0.05)
