"""The fused attention of a packed pass of prompts of one length is one batch of causal squares; of several
lengths, the block mask. Both equal softmax(Q K^T * scale) V over each prompt's own causal keys, written
out in float64."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from explorer.core import fused_attention
from explorer.core.visibility import Visibility

N_Q, N_KV, D, SCALE = 6, 2, 8, 0.3


def packed(lengths: list[int], window: int | None = None) -> Visibility:
    """The visibility a packed pass of prompts of `lengths` makes: each prompt's own rule (causal, within
    `window` where one cuts)."""
    sequences = np.repeat(np.arange(len(lengths)), lengths)
    positions = np.concatenate([np.arange(n) for n in lengths])
    return fused_attention.packed_visibility(positions, positions, sequences, window, "cpu")


def by_formula(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, lengths: list[int]) -> np.ndarray:
    """O_h = softmax(Q_h K_g^T * scale + causal mask) V_g for each prompt alone, float64."""
    q, k, v = (x.double().numpy() for x in (q, k, v))
    out, start = np.zeros((N_Q, q.shape[1], v.shape[-1])), 0
    for n in lengths:
        rows = slice(start, start + n)
        for h in range(N_Q):
            g = h // (N_Q // N_KV)
            s = q[h, rows] @ k[g, rows].T * SCALE + np.where(np.tri(n, dtype=bool), 0.0, -np.inf)
            a = np.exp(s - s.max(-1, keepdims=True))
            out[h, rows] = (a / a.sum(-1, keepdims=True)) @ v[g, rows]
        start += n
    return out


@pytest.mark.parametrize("lengths, batched", [([5, 5, 5, 5], True), ([7], True), ([5, 3, 6], False)])
def test_packed_fused_attention_equals_each_prompts_softmax(lengths, batched, monkeypatch):
    calls = []
    original = fused_attention._fused_blocks
    monkeypatch.setattr(fused_attention, "_fused_blocks", lambda *args: calls.append(args[3]) or original(*args))
    rng = torch.Generator().manual_seed(sum(lengths))
    rows = sum(lengths)
    q = torch.randn(rows, N_Q, D, generator=rng).transpose(0, 1)                # (N_Q, S, d): as attention hands it
    k, v = torch.randn(N_KV, rows, D, generator=rng), torch.randn(N_KV, rows, D, generator=rng)
    got = fused_attention.fused(q, k, v, packed(lengths), SCALE)
    np.testing.assert_allclose(got.numpy(), by_formula(q, k, v, lengths), atol=1e-5)
    assert calls == ([len(lengths)] if batched else [])


def test_a_mask_that_is_not_each_prompts_causal_square_is_not_batched():
    causal = packed([4, 4])
    assert causal.prompts.runs == ((2, 4),) and causal.mask is None            # 2 prompts of 4 tokens, no S x S mask
    windowed = packed([4, 4], window=3)                                          # the window hides key 0 from row 3
    assert windowed.prompts.runs is None
    block = np.zeros((8, 8), dtype=bool)
    for rows in (slice(0, 4), slice(4, 8)):
        block[rows, rows] = np.tri(4, dtype=bool) & ~np.tri(4, k=-3, dtype=bool)
    np.testing.assert_array_equal(windowed.mask, block)
    assert [own.rule.kind for own in windowed.prompts.own] == ["sliding", "sliding"]
