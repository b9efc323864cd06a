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

_CAUSAL: dict[int, tuple[weakref.ref, tuple | None]] = {}   # id(mask) -> (the mask, _lengths_of it)


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
    runs = None if seen.hidden is None else _runs(seen)
    if runs is not None:
        return _fused_runs(q, keys, values, runs, scale)
    mask = None if seen.hidden is None else ~seen.hidden      # True where the query takes part (sliding windows)
    out = F.scaled_dot_product_attention(q[None], keys[None], values[None], attn_mask=mask, scale=scale)
    return out[0]                                                                # (N_Q, T, d_v)


def _fused_runs(q: torch.Tensor, keys: torch.Tensor, values: torch.Tensor, runs: tuple, scale: float):
    """O of packed rows that are runs of prompts, ((count, length), ...) in row order, each prompt attending
    causally within itself: one batch of causal squares per run of one length (_fused_blocks)."""
    if len(runs) == 1:
        return _fused_blocks(q, keys, values, runs[0][0], scale)
    parts, start = [], 0
    for count, length in runs:
        rows = slice(start, start + count * length)
        parts.append(_fused_blocks(q[:, rows], keys[:, rows], values[:, rows], count, scale))
        start = rows.stop
    return torch.cat(parts, dim=1)                                               # (N_Q, S, d_v)


def _fused_blocks(q: torch.Tensor, keys: torch.Tensor, values: torch.Tensor, count: int, scale: float):
    """O of rows that are `count` prompts of one length side by side, each attending causally within itself,
    as one batch of causal squares (B, N_Q, T, d), views of the rows: the kernel skips every hidden entry
    instead of masking the S x S block (a packed pass of 8 prompts of 14 tokens: 0.29 ms a layer of
    SmolLM2 against 0.44)."""
    n, rows = q.shape[:2]
    out = F.scaled_dot_product_attention(*(x.view(n, count, rows // count, -1).transpose(0, 1)
                                           for x in (q, keys, values)), is_causal=True, scale=scale)
    return out.transpose(0, 1).reshape(n, rows, values.shape[-1])                 # (N_Q, S, d_v)


CALL_ENTRIES = 3000     # one more kernel call costs about what this many entries of the masked S x S block do
                        # (SmolLM2's heads, one CPU thread: 0.07 ms a call, 4.4e-5 ms an entry)


def _runs(seen) -> tuple | None:
    """How the packed prompts of `seen` are cut into runs of one length, ((count, length), ...) in row order,
    when its mask is exactly each prompt's causal square and a call per run costs less than the block mask:

        sum_i T_i^2 + CALL_ENTRIES * runs  <  S^2        (one run: always)

    (8 prompts of 13-16 tokens keep the mask, 0.6 ms a layer either way; 64 prompts of 10-40 tokens take
    10.7 ms a layer in runs against 82 ms for the mask); else None."""
    lengths = _prompts(seen)
    if lengths is None:
        return None
    runs: list[list[int]] = []
    for n in lengths:
        if runs and runs[-1][1] == n:
            runs[-1][0] += 1
        else:
            runs.append([1, n])
    rows = sum(lengths)
    if len(runs) > 1 and sum(n * n for n in lengths) + CALL_ENTRIES * len(runs) >= rows * rows:
        return None
    return tuple((count, n) for count, n in runs)


def _prompts(seen) -> tuple | None:
    """The lengths of the prompts `seen` holds side by side in row order, when its mask is exactly each one's
    causal square (query i of a prompt sees its keys 0..i; one prompt: the lower triangle); else None.
    Memoized per mask."""
    mask = seen.mask
    known = _CAUSAL.get(id(mask))
    if known is None or known[0]() is not mask:
        if len(_CAUSAL) > 8:                          # weak references: the masks die with their pass
            _CAUSAL.clear()
        known = _CAUSAL[id(mask)] = (weakref.ref(mask), _lengths_of(mask, seen.sequences))
    return known[1]


def _lengths_of(mask: np.ndarray, sequences: np.ndarray | None) -> tuple | None:
    rows = len(mask)
    if mask.shape[1] != rows or rows == 0:
        return None
    if sequences is None:
        starts = np.array([0])
    else:
        starts = np.flatnonzero(np.concatenate([[True], sequences[1:] != sequences[:-1]]))   # each run's first row
    lengths = np.diff(np.append(starts, rows))
    blocks = np.repeat(np.arange(len(lengths)), lengths)                     # prompt b: its run of rows
    expected = np.tri(rows, dtype=bool) & (blocks[:, None] == blocks[None, :])
    return tuple(int(n) for n in lengths) if np.array_equal(mask, expected) else None
