"""The fused path of self-attention: O = softmax(Q K^T * scale + mask) V without forming A.

A prefill whose weights nobody records (the trace rebuilds A from the same Q and K when a
view asks: attention_maps, recording.rebuildable) and that no intervention changes runs
torch's scaled_dot_product_attention, which never holds the (N_Q, T, T) scores: at 8,000
tokens those are 2.3 GB per layer of SmolLM2. Everything else takes attention.attend.
"""
from __future__ import annotations

import weakref

import numpy as np
import torch
import torch.nn.functional as F

_CAUSAL: dict[int, tuple[weakref.ref, int | None]] = {}   # id(mask) -> (the mask, _blocks_of it)


def applies(capture, site, softcap: float | None, n_new: int) -> bool:
    """Whether a pass may take the fused path: more than one new row, A not asked for (no capture,
    or one that rebuilds it), no intervention site, no soft-capping (the kernel has none)."""
    return n_new > 1 and site is None and not softcap and (capture is None or not capture.weights)


def fused(q: torch.Tensor, keys: torch.Tensor, values: torch.Tensor, seen, scale: float) -> torch.Tensor:
    """O_h = softmax(Q_h K_g^T * scale, over the keys `seen` shows) V_g for every head: (N_Q, T, d_v).

    q: (N_Q, T, d_qk), keys: (N_KV, n_kv, d_qk), values: (N_KV, n_kv, d_v); GQA groups as grouped_scores.
    """
    group = q.shape[0] // keys.shape[0]
    if group > 1:                     # each K/V head repeated for its query heads: the kernel's GQA path ran
        keys, values = keys.repeat_interleave(group, 0), values.repeat_interleave(group, 0)   # 1.6x slower
    count = None if seen.hidden is None else _causal_blocks(seen)
    if count is not None:
        return _fused_blocks(q, keys, values, count, scale)
    mask = None if seen.hidden is None else ~seen.hidden      # True where the query takes part (sliding windows)
    out = F.scaled_dot_product_attention(q[None], keys[None], values[None], attn_mask=mask, scale=scale)
    return out[0]                                                                # (N_Q, T, d_v)


def _fused_blocks(q: torch.Tensor, keys: torch.Tensor, values: torch.Tensor, count: int, scale: float):
    """O of rows that are `count` prompts of one length side by side, each attending causally within itself,
    as one batch of causal squares (B, N_Q, T, d), views of the rows: the kernel skips every hidden entry
    instead of masking the S x S block (a packed pass of 8 prompts of 14 tokens: 0.29 ms a layer of
    SmolLM2 against 0.44). Prompts of several lengths keep the block mask: padded to the longest, or one
    call each, they measured slower."""
    n, rows = q.shape[:2]
    out = F.scaled_dot_product_attention(*(x.view(n, count, rows // count, -1).transpose(0, 1)
                                           for x in (q, keys, values)), is_causal=True, scale=scale)
    return out.transpose(0, 1).reshape(n, rows, values.shape[-1])                 # (N_Q, S, d_v)


def _causal_blocks(seen) -> int | None:
    """How many prompts of one length `seen` holds side by side, when its mask is exactly each one's causal
    square (query i of a prompt sees its keys 0..i; one prompt: the lower triangle); else None. Memoized
    per mask."""
    mask = seen.mask
    known = _CAUSAL.get(id(mask))
    if known is None or known[0]() is not mask:
        if len(_CAUSAL) > 8:                          # weak references: the masks die with their pass
            _CAUSAL.clear()
        known = _CAUSAL[id(mask)] = (weakref.ref(mask), _blocks_of(mask, seen.sequences))
    return known[1]


def _blocks_of(mask: np.ndarray, sequences: np.ndarray | None) -> int | None:
    rows = len(mask)
    count = 1 if sequences is None else len(np.unique(sequences))
    if mask.shape[1] != rows or rows % count:
        return None
    expected = np.tri(rows, dtype=bool)                                     # one prompt: the lower triangle
    if count > 1:
        blocks = np.arange(rows) // (rows // count)                          # prompt b: rows b T .. (b + 1) T - 1
        expected &= blocks[:, None] == blocks[None, :]
    return count if np.array_equal(mask, expected) else None
