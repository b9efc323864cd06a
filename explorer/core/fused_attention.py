"""Attention over a packed pass, and the fused path of self-attention.

A packed pass (packed.py) holds prompts side by side, each attending within itself by the rule its pass alone
makes (MaskRule: causal, within a sliding window where one cuts). Its Visibility carries each prompt's own
(PackedPrompts) and, where each prompt's mask is its causal square and a call per run costs less than the
S x S block mask (_runs), takes the prompts as runs of one length: each run one batch of squares
(B, N_Q, T, T), views of the rows. Every path takes them, so none forms the S x S mask or scores:

- the fused path (fused): a prefill whose weights nobody records (the trace rebuilds A from the same Q and K
  when a view asks: attention_maps, recording.rebuildable) and that no intervention changes runs torch's
  scaled_dot_product_attention, which never holds the (N_Q, T, T) scores: at 8,000 tokens those are 2.3 GB
  per layer of SmolLM2;
- the path that forms A (in_squares: a record of the maps, an intervention) runs attention.attend over each
  run's squares, one prompt at a time under an intervention (its sites name a prompt's rows).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import NamedTuple

import numpy as np
import torch
import torch.nn.functional as F

from explorer.core.attention_maps import MaskRule
from explorer.core.visibility import Visibility


@dataclass(frozen=True, eq=False)
class PackedPrompts:
    """The prompts of a packed pass: each one's rows, its own Visibility (the MaskRule its pass alone makes),
    and the runs attention takes them in, ((count, length), ...) in row order (None: the S x S block mask)."""

    spans: tuple[slice, ...]
    own: tuple[Visibility, ...]
    runs: tuple[tuple[int, int], ...] | None


class PromptAttention(NamedTuple):
    """One packed prompt's attention as it ran: A (N_Q, T_i, T_i) or None (not formed), its mask (T_i, T_i),
    its keys' positions, and the MaskRule the mask was made by (None where an intervention hid entries)."""

    weights: torch.Tensor | None
    mask: np.ndarray
    keys: np.ndarray
    rule: MaskRule | None


def packed_visibility(positions: np.ndarray, kv_positions: np.ndarray, sequences: np.ndarray, window: int | None,
                      device) -> Visibility:
    """Which keys each row of a packed pass sees (`sequences`: each row's prompt, its rows side by side; the keys
    are the rows): its own prompt's, by the rule that prompt's pass alone makes. In runs of squares where _runs
    takes them (no S x S mask is made: `mask` None), else the block mask; each prompt's own rule carried."""
    starts = np.flatnonzero(np.concatenate([[True], sequences[1:] != sequences[:-1]]))       # each prompt's first row
    stops = np.append(starts[1:], len(sequences))
    spans = tuple(slice(int(a), int(b)) for a, b in zip(starts, stops))
    made: dict[bytes, Visibility] = {}                                       # prompts of one length share one

    def own(rows: slice) -> Visibility:
        queries, keys = positions[rows], kv_positions[rows]
        key = queries.tobytes() + b"|" + keys.tobytes()
        if key not in made:
            made[key] = Visibility.by(MaskRule.of(queries, keys, window), device)
        return made[key]

    owns = tuple(own(rows) for rows in spans)
    squares = all(seen.rule.kind == "causal" and np.array_equal(seen.queries, seen.keys) for seen in owns)
    runs = _runs([rows.stop - rows.start for rows in spans]) if squares else None
    prompts = PackedPrompts(spans, owns, runs)
    if runs is not None:
        return Visibility(None, None, positions, kv_positions, sequences, prompts=prompts)
    visible = np.zeros((len(positions), len(kv_positions)), dtype=bool)      # the block mask: each prompt's own
    for rows, seen in zip(spans, owns):
        visible[rows, rows] = seen.mask
    return replace(Visibility.of(visible, positions, kv_positions, device, sequences), prompts=prompts)


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
    runs = _square_runs(seen)
    if runs is not None:
        return _fused_runs(q, keys, values, runs, scale)
    mask = None if seen.hidden is None else ~seen.hidden      # True where the query takes part (sliding windows)
    out = F.scaled_dot_product_attention(q[None], keys[None], values[None], attn_mask=mask, scale=scale)
    return out[0]                                                                # (N_Q, T, d_v)


def _square_runs(seen) -> tuple | None:
    """The runs of causal squares `seen` is made of: a packed pass's where it takes them, one prompt's own causal
    square (its keys are its rows); else None."""
    if seen.prompts is not None:
        return seen.prompts.runs
    rule = seen.rule
    if rule is not None and rule.kind == "causal" and seen.padding is None and np.array_equal(rule.queries, rule.keys):
        return ((1, len(rule.queries)),)
    return None


def as_attended(seen) -> tuple[PromptAttention, ...] | None:
    """Each packed prompt's attention where nothing edited its mask (the fused path): its own rule; None
    where `seen` is not a packed pass's."""
    if seen.prompts is None:
        return None
    return tuple(PromptAttention(None, own.mask, own.keys, own.rule) for own in seen.prompts.own)


def in_squares(core, seen, tensors: tuple, one_by_one: bool = False):
    """core(*tensors, seen) -> (A, O, the visibility attended) over a pass's rows, the tensors' rows in their
    second-to-last dimension ((heads, T, d), or (T, d) shared by every head). In a packed pass taken in runs of
    squares, core runs once per run on its rows as a batch (B, heads, T, d) ((B, 1, T, d) for a shared one),
    each prompt seeing its own Visibility; once per prompt (B = 1) where `one_by_one` (an intervention's sites
    read a prompt's own rows and sequence). Returns A (None in squares), O (N_Q, T, d_v), the visibility
    attended, and in a packed pass each prompt's PromptAttention (else None)."""
    prompts = seen.prompts
    if prompts is None or prompts.runs is None:
        weights, heads, attended = core(*tensors, seen)
        return weights, heads, attended, None if prompts is None else _cut(weights, attended, prompts)
    outputs, parts, first, start = [], [], 0, 0
    for count, n in prompts.runs:
        for offset, batch in ([(b, 1) for b in range(count)] if one_by_one else [(0, count)]):
            rows = slice(start + offset * n, start + (offset + batch) * n)
            own = prompts.own[first + offset]
            if one_by_one:
                own = replace(own, sequences=seen.sequences[rows])                  # its sites name its sequence
            weights, heads, attended = core(*(_square(x, rows, batch) for x in tensors), own)
            outputs.append(heads.transpose(0, 1).reshape(heads.shape[1], batch * n, heads.shape[-1]))
            parts += [PromptAttention(None if weights is None else weights[b], attended.mask, own.keys,
                                      attended.rule) for b in range(batch)]
        first, start = first + count, start + count * n
    return None, torch.cat(outputs, dim=1), seen, tuple(parts)                  # O: (N_Q, S, d_v)


def _square(x: torch.Tensor, rows: slice, count: int) -> torch.Tensor:
    """Rows `rows` of x (heads, S, d) or (S, d), `count` prompts of one length, as (count, heads | 1, T, d): views."""
    part = x[..., rows, :]
    if part.dim() == 2:
        part = part[None]                                                        # one head for all (MLA's c_KV, k_R)
    heads, n, d = part.shape
    return part.view(heads, count, n // count, d).transpose(0, 1)


def _cut(weights: torch.Tensor | None, attended, prompts: PackedPrompts) -> tuple[PromptAttention, ...]:
    """Each prompt's part of attention over the block mask: its rows of A against its own keys, and its own
    rule unless an intervention hid entries (attend's visibility then carries no PackedPrompts)."""
    edited = attended.prompts is None
    return tuple(PromptAttention(None if weights is None else weights[:, rows, rows],
                                 attended.mask[rows, rows] if edited else own.mask, own.keys,
                                 None if edited else own.rule)
                 for rows, own in zip(prompts.spans, prompts.own))


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


def _runs(lengths: list[int]) -> tuple | None:
    """How packed prompts of `lengths` (row order), each attending within its causal square, are cut into runs of
    one length, ((count, length), ...) in row order, when a call per run costs less than the block mask:

        sum_i T_i^2 + CALL_ENTRIES * runs  <  S^2        (one run: always)

    (8 prompts of 13-16 tokens keep the mask, 0.6 ms a layer either way; 64 prompts of 10-40 tokens take
    10.7 ms a layer in runs against 82 ms for the mask); else None."""
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
