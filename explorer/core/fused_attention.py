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

_CAUSAL: dict[int, tuple[weakref.ref, bool]] = {}   # id(mask) -> (the mask, whether it is the lower triangle)


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
    if seen.hidden is None:
        mask, causal = None, False
    elif _is_lower_triangle(seen.mask):
        mask, causal = None, True                     # the kernel skips the hidden half instead of masking it
    else:
        mask, causal = ~seen.hidden, False            # True where the query takes part (sliding windows)
    out = F.scaled_dot_product_attention(q[None], keys[None], values[None], attn_mask=mask, is_causal=causal,
                                         scale=scale)
    return out[0]                                                                # (N_Q, T, d_v)


def _is_lower_triangle(mask: np.ndarray) -> bool:
    """Whether `mask` (T, n_kv) is exactly the causal square: query i sees keys 0..i."""
    known = _CAUSAL.get(id(mask))
    if known is None or known[0]() is not mask:
        square = mask.shape[0] == mask.shape[1]
        if len(_CAUSAL) > 8:                          # weak references: the masks die with their pass
            _CAUSAL.clear()
        causal = square and bool(np.array_equal(mask, np.tri(len(mask), dtype=bool)))
        known = _CAUSAL[id(mask)] = (weakref.ref(mask), causal)
    return known[1]
