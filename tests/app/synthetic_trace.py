"""Realistic random Traces for panel and export tests, numpy only (no model, no torch).

Attention is computed from the recorded Q and K exactly as the engine does it,
S = Q K^T * scale with the mask applied, A = softmax(S) with exact zeros where
masked, so `Trace.scores` and `Trace.attention` agree with each other.
"""
from __future__ import annotations

import numpy as np

from explorer.core.kv_variants import bytes_per_token_per_layer
from explorer.core.trace import AttentionRecord, LayerRecord, ModelInfo, StepRecord, Trace, packed

WORDS = ("The", " cat", " sat", " on", " the", " mat", ".", " It", " was", " warm", " and",
         " quiet", "\\n", " A", " dog", " ran", " by", ",", " then", " slept")
TOP_K = 5


def model_info(n_layers=2, n_heads=4, n_kv_heads=None, d_head=8, d_model=32, sliding_window=None,
               mla_rank=None, mla_rope_dim=None, encoder_only=False, max_positions=64) -> ModelInfo:
    n_kv = n_kv_heads or n_heads
    if mla_rank:
        attention, n_kv = "mla", n_heads
    else:
        attention = "mha" if n_kv == n_heads else ("mqa" if n_kv == 1 else "gqa")
    if encoder_only:
        kinds = ("full",) * n_layers
    elif sliding_window:
        kinds = tuple("sliding" if layer % 2 == 0 else "causal" for layer in range(n_layers))
    else:
        kinds = ("causal",) * n_layers
    return ModelInfo(
        name="synthetic", family="bert" if encoder_only else "llama", attention=attention,
        n_layers=n_layers, n_heads=n_heads, n_kv_heads=n_kv, d_model=d_model, d_qk=d_head, d_v=d_head,
        vocab_size=len(WORDS), max_positions=max_positions, n_params=12345, dtype="float32",
        device="cpu", layer_kinds=kinds, sliding_window=sliding_window,
        mla_rank=mla_rank, mla_rope_dim=mla_rope_dim if mla_rank else None, is_encoder_only=encoder_only)


def kv_bytes_per_token(info: ModelInfo) -> int:
    """Bytes one token costs in one layer's cache, by the formulas the KV panel uses."""
    return bytes_per_token_per_layer(info)


def build_trace(n_layers=2, n_heads=4, n_kv_heads=None, prompt_len=6, steps=0, d_head=8, d_model=32,
                sliding_window=None, mla_rank=None, mla_rope_dim=4, encoder_only=False,
                seed=0, max_positions=64) -> Trace:
    """A prefill of `prompt_len` tokens followed by `steps` one-token decoding steps."""
    info = model_info(n_layers, n_heads, n_kv_heads, d_head, d_model, sliding_window,
                      mla_rank, mla_rope_dim, encoder_only, max_positions)
    rng = np.random.default_rng(seed)
    records = []
    ids = list(rng.integers(0, len(WORDS), prompt_len))
    for index in range(1 + (0 if encoder_only else steps)):
        positions = np.arange(prompt_len) if index == 0 else np.array([prompt_len + index - 1])
        step_ids = np.array(ids[: prompt_len] if index == 0 else [ids[-1]], dtype=np.int64)
        kind = "encode" if encoder_only else ("prefill" if index == 0 else "decode")
        records.append(_step(info, rng, kind, positions, step_ids, records))
        ids.append(int(records[-1].chosen_id))
    steps_t = tuple(records)
    return Trace(model=info, steps=steps_t, encoder=steps_t[0] if encoder_only else None,
                 rope_inv_freq=1.0 / (10000 ** (np.arange(0, d_head, 2) / d_head)))


def _step(info, rng, kind, positions, ids, previous) -> StepRecord:
    n_new = len(positions)
    layers = tuple(_layer(info, rng, layer, positions, previous) for layer in range(info.n_layers))
    top = np.argsort(-rng.random((n_new, len(WORDS))), axis=1)[:, :TOP_K]
    probs = np.sort(rng.dirichlet(np.ones(TOP_K) * 0.5, n_new), axis=1)[:, ::-1] * 0.9
    return StepRecord(
        kind=kind, positions=positions.astype(np.int64), token_ids=ids,
        token_text=tuple(WORDS[i] for i in ids), embeddings=rng.normal(size=(n_new, info.d_model)).astype(np.float32),
        layers=layers, top_ids=top.astype(np.int64), top_probs=probs.astype(np.float32),
        chosen_id=int(top[-1, 0]), ms=1.0)


def _visible(info, layer, positions):
    """Key positions the cache holds and the mask of the new queries against them."""
    last = int(positions[-1])
    kind = info.layer_kinds[layer]
    first = max(0, last - info.sliding_window + 1) if kind == "sliding" and len(positions) == 1 else 0
    kv_positions = np.arange(first, last + 1)
    q, k = positions[:, None], kv_positions[None, :]
    if kind == "full":
        mask = np.ones((len(positions), len(kv_positions)), dtype=bool)
    else:
        mask = k <= q
        if kind == "sliding":
            mask &= k > q - info.sliding_window
    return kv_positions, mask


def _layer(info, rng, layer, positions, previous) -> LayerRecord:
    n_new, h, n_kv, d = len(positions), info.n_heads, info.n_kv_heads, info.d_qk
    sink = np.full(d, 0.8, dtype=np.float32)      # keys of position 0 align with every query: an attention sink
    q = (rng.normal(size=(h, n_new, d)) + sink).astype(np.float32)               # (N_Q, n_new, d)
    k = rng.normal(size=(n_kv, n_new, d)).astype(np.float32)                     # (N_KV, n_new, d)
    k[:, positions == 0] += sink
    v = rng.normal(size=(n_kv, n_new, info.d_v)).astype(np.float32)
    kv_positions, mask = _visible(info, layer, positions)
    old_k = [s.layers[layer].attn.k for s in previous]
    k_all = np.concatenate(old_k + [k], axis=1)[:, kv_positions]                  # (N_KV, n_kv, d)
    group = h // n_kv
    scale = 1.0 / np.sqrt(d)
    scores = np.einsum("hqd,hkd->hqk", q, np.repeat(k_all, group, axis=0)) * scale  # (N_Q, n_new, n_kv)
    scores = np.where(mask, scores, -np.inf)
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights = (weights / weights.sum(axis=-1, keepdims=True)).astype(np.float32)   # exact 0 where masked
    attn = AttentionRecord(
        q=q, k=k, v=v, weights_packed=packed(weights, mask), mask=mask, kv_positions=kv_positions, scale=float(scale),
        q_pre_rope=q * 0.9, k_pre_rope=k * 0.9,
        latent=rng.normal(size=(n_new, info.mla_rank)).astype(np.float32) if info.mla_rank else None,
        k_rope=rng.normal(size=(n_new, info.mla_rope_dim)).astype(np.float32) if info.mla_rank else None)
    per_token = kv_bytes_per_token(info)
    capacity = info.sliding_window if info.layer_kinds[layer] == "sliding" else info.max_positions
    held = min(len(kv_positions), capacity)
    return LayerRecord(
        x=rng.normal(size=(n_new, info.d_model)).astype(np.float32), attn=attn,
        residual_norm=np.abs(rng.normal(size=n_new)).astype(np.float32) + 1.0,
        kv_bytes_in_use=0 if info.is_encoder_only else held * per_token,
        kv_bytes_allocated=0 if info.is_encoder_only else capacity * per_token)
