"""Several prompts in one forward pass, packed side by side: each row attends only within its own prompt.

    rows = [prompt_0 | prompt_1 | ...],  positions restart at 0 in each,  mask_ij = causal and same prompt

The weights are read once for all prompts (what a short prompt's pass spends its time on), and no
padding enters any sum, so each prompt's numbers are its own pass's up to float rounding.

Two uses: the capture of a pass cut back into one capture per prompt up to its asked position
(packed_captures: attribution), and a batch of recorded runs (prefill_packed): each layer's rows are
handed to each prompt's own recording capture as the layer ends (SpreadCapture), with the mask its
own pass would make, and its K and V to its own cache, so that every prompt's Decoder then holds the
trace, cache and states of its prompt's prefill. A batch is cut into chunks whose pass_bytes fit a
memory budget (explorer.core.pass_budget).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import torch

from explorer.core.capture import AttentionCapture, StepCapture
from explorer.core.decode import Decoder
from explorer.core.families import family_of_model
from explorer.core.intervention_run import as_run
from explorer.core.pass_budget import PASS_ROWS, by_length, chunks, default_budget, pass_bytes, shares_logits
from explorer.core.recording import rebuilds

BLOCK_ROWS = ("residual_in", "attn_out", "ffn_out", "residual", "x")


def packed_captures(loaded, prompts: list[np.ndarray], positions: list[int], intervention=None,
                    budget: int | None = None, last_only: bool = False) -> list[StepCapture]:
    """One capture per prompt whose last row is its position, from packed passes over the prompts cut at
    their positions, as many prompts to a pass as `budget` bytes allow (None: default_budget). With
    `last_only`, each capture holds only that row of what a readout there needs (LastRows)."""
    cut = [np.asarray(ids[: p + 1], dtype=np.int64) for ids, p in zip(prompts, positions)]
    budget = default_budget(loaded) if budget is None else budget

    def fits(indices: list[int]) -> bool:
        mine = [len(cut[i]) for i in indices]
        return sum(mine) <= PASS_ROWS and pass_bytes(loaded.config, mine, weights=False) <= budget

    captures: list[StepCapture | None] = [None] * len(cut)
    for chunk in chunks(len(cut), fits):
        order = by_length(chunk, [len(ids) for ids in cut])
        for index, capture in zip(order, _captures_of_pass(loaded, [cut[i] for i in order], intervention,
                                                            last_only)):
            captures[index] = capture
    return captures


def _captures_of_pass(loaded, cut: list[np.ndarray], intervention, last_only: bool = False) -> list[StepCapture]:
    """One capture per prompt of `cut` (ids), from one packed pass over them (of its last row only: LastRows)."""

    model = loaded.model
    lengths = [len(ids) for ids in cut]
    sequences = np.repeat(np.arange(len(cut)), lengths)
    rows = np.concatenate([np.arange(n) for n in lengths])
    starts = np.concatenate([[0], np.cumsum(lengths)])
    device = model.embed.weight.device
    n_layers = loaded.config.n_layers
    capture = LastRows(n_layers, torch.as_tensor(starts[1:] - 1, device=device)) if last_only else \
        StepCapture(n_layers, weights=False)
    with torch.inference_mode():
        step = model.step_context(rows, as_run(intervention), sequences)
        h = model.embed_tokens(torch.as_tensor(np.concatenate(cut), device=device), step)
        model.run_blocks(h, step, None, capture)
    if last_only:
        return capture.each()
    return [_rows_of(capture, slice(int(a), int(b)), i) for i, (a, b) in enumerate(zip(starts[:-1], starts[1:]))]


class LastRows(StepCapture):
    """A packed pass's capture that keeps, as each layer ends, only the given rows (each prompt's last) of what a
    readout at those rows needs: the residual stream entering and leaving the block, the FFN's output and the
    heads' outputs O_h (what the attribution of a logit reads, logit_difference.py). Every other row, and X, Q,
    K, V and the masks, is let go with its layer, so the pass holds what a plain forward holds."""

    KEPT = ("residual_in", "ffn_out", "residual")

    def __init__(self, n_layers: int, rows: torch.Tensor) -> None:
        super().__init__(n_layers, weights=False)
        self.rows = rows                                                    # (B,) one row per prompt

    def attention(self, layer: int, record: AttentionCapture, cross: bool = False) -> None:
        super().attention(layer, AttentionCapture(q=None, k=None, v=None, weights=None, mask=None, kv_positions=None,
                                                  head_out=record.head_out[:, self.rows], scale=record.scale), cross)

    def block(self, layer: int, **tensors) -> None:
        super().block(layer, **{name: tensors[name][self.rows] for name in self.KEPT})

    def each(self) -> list[StepCapture]:
        """One capture per prompt, its layers holding its one row."""
        out = []
        for index in range(len(self.rows)):
            row, one = slice(index, index + 1), StepCapture(len(self.layers), weights=False)
            for mine, whole in zip(one.layers, self.layers):
                for name in self.KEPT:
                    setattr(mine, name, getattr(whole, name)[row])
                mine.attn = replace(whole.attn, head_out=whole.attn.head_out[:, row])
            out.append(one)
        return out


def _rows_of(capture: StepCapture, rows: slice, index: int) -> StepCapture:
    """The block tensors and head outputs of packed prompt `index`, whose rows are `rows`, with the mask and rule
    of its own attention (AttentionCapture.prompts)."""
    out = StepCapture(len(capture.layers), weights=False)
    for layer, whole in zip(out.layers, capture.layers):
        for name in BLOCK_ROWS:
            value = getattr(whole, name)
            setattr(layer, name, None if value is None else value[rows])
        own = whole.attn.prompts[index]
        layer.attn = AttentionCapture(q=None, k=None, v=None, weights=None, head_out=whole.attn.head_out[:, rows],
                                      mask=own.mask, kv_positions=own.keys, scale=whole.attn.scale, rule=own.rule)
    return out


# ----- a batch of recorded runs from packed passes ------------------------------------------


def can_record_packed(loaded, intervention) -> bool:
    """Whether a batch of runs of `loaded` may take their prefill from packed passes: a decoder-only model
    (MLA's cache takes each prompt's rows of the latent c_KV and k_R), under any `intervention`. A packed pass
    equals the prompts' own passes under every kind: a patch (of a head's output, the residual, a sublayer's
    output, a head's Q, K, V or pattern) names positions, which every packed prompt has
    (intervention_parts.rows_of writes each prompt's rows at them; a pattern row its own prompt's keys,
    intervention_run.Site.patterns); a mean ablation takes each prompt's mean over its own rows
    (intervention_run.Site) and hands it to its run for its later steps (_packed_pass); a path takes its
    sender's delta and its receiver's input row by row, at each prompt's positions (path_patching.py)."""

    return family_of_model(loaded).driver == "decoder"                          # drivers.DRIVERS' Decoder


class SharedLogits:
    """The logits h W_U of every row of a packed pass, as one product (S, V) made when the first prompt asks,
    each prompt then reading its own rows: W_U is read once for the batch, as a batched forward reads it.
    The product is let go once every prompt has taken its rows (each keeps its copy)."""

    def __init__(self, model, hidden: torch.Tensor, spans: list[slice]) -> None:
        self.model, self.hidden, self.spans = model, hidden, spans        # hidden: (S, d) final-normed
        self._logits: torch.Tensor | None = None
        self._waiting = set(range(len(spans)))

    def rows(self, index: int) -> torch.Tensor:
        """The logits of prompt `index`'s rows (T_i, V) float32, a copy; asked once per prompt."""
        if self._logits is None:
            with torch.inference_mode():
                self._logits = self.model.logits(self.hidden).float()     # (S, V): one matmul for all
        mine = self._logits[self.spans[index]].clone()
        self._waiting.discard(index)
        if not self._waiting:
            self._logits = self.hidden = None
        return mine


class LastLogits:
    """The logits after each prompt's last row of a packed pass (B, V), as one product over the B final states
    made when the first prompt asks (W_U read once for the batch), and never where none asks: a metric of two
    tokens (Run.logit_diff) reads their two rows of W_U from the final states instead (patching.token_logits)."""

    def __init__(self, model, last: torch.Tensor) -> None:
        self.model, self.last = model, last                    # last: (B, d) final-normed
        self._logits: torch.Tensor | None = None

    def row(self, index: int) -> torch.Tensor:
        """The logits after prompt `index`'s last row: (1, V)."""
        if self._logits is None:
            with torch.inference_mode():
                self._logits = self.model.logits(self.last)    # (B, V): one matmul for all
        return self._logits[index: index + 1]


@dataclass
class PackedPrefill:
    """One prompt's part of a packed pass: its own capture (filled), its K and V per layer for its cache,
    its final-normed states (T, d), the pass's logits after each prompt's last row (`last`; its own:
    next_logits), where the budget holds them the pass's shared product of every row's logits (`index`: its
    place in both), and its prompt means."""

    capture: StepCapture
    keys_values: list
    hidden: torch.Tensor
    last: LastLogits
    logits: SharedLogits | None = None
    index: int = 0
    means: dict = field(default_factory=dict)         # a mean ablation's means over this prompt's rows

    @property
    def next_logits(self) -> torch.Tensor:
        """The logits after this prompt's last row (1, V), from the pass's one product (made when first asked)."""
        return self.last.row(self.index)


class PackedDecoder(Decoder):
    """A decode.Decoder whose prefill may take its numbers from a packed pass over several prompts
    (prefill_packed) instead of running its prompt alone: the same records, cache and final states,
    each from the prompt's own rows. Every later move (step, back, force) is the Decoder's own."""

    _given: PackedPrefill | None = None
    _shared: tuple[SharedLogits, int] | None = None          # the prefill's logits in its pass's product
    last_logits: torch.Tensor | None = None                  # (1, V) after a packed prefill's last row, from its pass

    def prefill(self, ids):
        self._shared = None if self._given is None or self._given.logits is None else \
            (self._given.logits, self._given.index)
        self.last_logits = None if self._given is None else self._given.next_logits
        return super().prefill(ids)

    def step_logits(self, step: int) -> torch.Tensor:
        """h W_U of recorded step `step`'s rows (n_new, V) float32: a packed prefill's from its pass's shared
        product (taken once; the Run keeps it), else this step's own product."""
        if step == 0 and self._shared is not None:
            (shared, index), self._shared = self._shared, None
            return shared.rows(index)
        with torch.inference_mode():
            return self.model.logits(self._hidden[step]).float()

    def capture_for(self, n_new: int) -> StepCapture:
        """The capture a prefill of n_new tokens records into, under this decoder's intervention."""
        self._intervened = self.new_run()
        return self._new_capture(n_new, 0)

    def prefill_from(self, ids: np.ndarray, given: PackedPrefill):
        """prefill(ids), its pass being `given`."""
        self._given = given
        try:
            trace = self.prefill(ids)
        finally:
            self._given = None
        if given.means and self._intervened is not None:
            self._intervened.take_means(given.means)                 # its steps reuse its prompt's means
        return trace

    def _new_capture(self, n_new: int, n_cached: int) -> StepCapture:
        return super()._new_capture(n_new, n_cached) if self._given is None else self._given.capture

    def _forward(self, ids: torch.Tensor, positions: np.ndarray, capture: StepCapture) -> torch.Tensor:
        if self._given is None:
            return super()._forward(ids, positions, capture)
        for cache, (k, v) in zip(self.kv_cache.layers, self._given.keys_values):
            cache.update(k, v)                                                   # as the prompt's own pass would
        return self._given.hidden

    def _next_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        return super()._next_logits(hidden) if self._given is None else self._given.next_logits


class SpreadCapture(StepCapture):
    """A packed pass's capture, handed on as each layer ends: each prompt's rows go to its own capture, cut
    to its rows and keys with the mask and rule of its own attention (AttentionCapture.prompts: its own pass's
    unless an intervention hid entries), and its K and V are kept for its cache. Nothing of a layer stays here
    once the layer is done."""

    def __init__(self, captures: list[StepCapture], spans: list[slice], n_layers: int, weights: bool):
        super().__init__(n_layers, weights)
        self.captures, self.spans = captures, spans
        self.keys_values: list[list] = [[] for _ in captures]
        self._attention: dict[int, AttentionCapture] = {}

    def attention(self, layer: int, record: AttentionCapture, cross: bool = False) -> None:
        self._attention[layer] = record

    def block(self, layer: int, **tensors) -> None:
        record = self._attention.pop(layer)
        for capture, rows, own, kept in zip(self.captures, self.spans, record.prompts, self.keys_values):
            if capture.layers:                                                   # else its layers are not recorded
                capture.attention(layer, _cut(record, rows, own))
                capture.block(layer, **{name: value[rows] for name, value in tensors.items()})
            # MLA caches c_KV (T, d_c), k_R (T, d_R)
            if record.latent is not None:
                kept.append((record.latent[rows], record.k_rope[rows]))
            else:
                kept.append((record.k[:, rows], record.v[:, rows]))              # (N_KV, T, d) each


def _cut(record: AttentionCapture, rows: slice, own) -> AttentionCapture:
    """One prompt's part of a packed attention capture: its query rows against its own keys (the same rows),
    with its own attention (`own`: fused_attention.PromptAttention: its A, its mask and the rule it carries)."""
    heads = ("q", "k", "v", "head_out", "q_pre_rope", "k_pre_rope")             # (heads, S, d): rows in dim 1
    cut = {name: getattr(record, name)[:, rows] for name in heads if getattr(record, name) is not None}
    cut.update({name: getattr(record, name)[rows] for name in ("latent", "k_rope")        # MLA: (S, d) rows first
                if getattr(record, name) is not None})
    weights = None if own.weights is None else own.weights.contiguous()                  # (N_Q, T, T)
    return replace(record, **cut, weights=weights, mask=own.mask, kv_positions=own.keys, rule=own.rule,
                   prompts=None)


def prefill_packed(loaded, decoders: list[PackedDecoder], prompts: list[np.ndarray], budget: int):
    """Prefill each decoder with its prompt, from packed passes over runs of prompts whose pass_bytes fit
    `budget` and whose rows are at most PASS_ROWS (a prompt alone runs its own prefill); yields each
    prompt's index once its record is made."""
    lengths = [len(ids) for ids in prompts]
    stored = [not rebuilds(n, n, own_keys=True) for n in lengths]               # short prompts store their A

    def fits(indices: list[int]) -> bool:
        mine = [lengths[i] for i in indices]
        return sum(mine) <= PASS_ROWS and pass_bytes(loaded.config, mine, any(stored[i] for i in indices)) <= budget

    for chunk in chunks(len(prompts), fits):
        if len(chunk) == 1:
            decoders[chunk[0]].prefill(prompts[chunk[0]])
            yield chunk[0]
            continue
        order = by_length(chunk, lengths)
        given = _packed_pass(loaded, [decoders[i] for i in order], [prompts[i] for i in order],
                             shares_logits(loaded.config, sum(lengths[i] for i in chunk), budget))
        for index, part in zip(order, given):
            decoders[index].prefill_from(prompts[index], part)
            yield index


def _packed_pass(loaded, decoders: list[PackedDecoder], prompts: list[np.ndarray],
                 share_logits: bool = False) -> list[PackedPrefill]:
    """One pass over `prompts` packed side by side, spread into each decoder's own capture (and, when
    `share_logits`, one SharedLogits over its rows)."""
    model = loaded.model
    lengths = [len(ids) for ids in prompts]
    starts = np.concatenate([[0], np.cumsum(lengths)])
    spans = [slice(int(a), int(b)) for a, b in zip(starts[:-1], starts[1:])]
    captures = [decoder.capture_for(n) for decoder, n in zip(decoders, lengths)]
    spread = SpreadCapture(captures, spans, len(model.layers), any(c.weights for c in captures))
    with torch.inference_mode():
        step = model.step_context(np.concatenate([np.arange(n) for n in lengths]), decoders[0].intervention,
                                  np.repeat(np.arange(len(prompts)), lengths))
        h = model.embed_tokens(torch.as_tensor(np.concatenate(prompts), device=model.embed.weight.device), step)
        hidden = model.norm(model.run_blocks(h, step, None, spread))                # (S, d)
    last = LastLogits(model, hidden[torch.as_tensor(starts[1:] - 1)])                # (B, d): W_U read when asked
    shared = SharedLogits(model, hidden, spans) if share_logits else None
    return [PackedPrefill(capture, kept, hidden[rows].clone(), last, shared, i,
                          {} if step.run is None else step.run.means_of(i))
            for i, (capture, kept, rows) in enumerate(zip(captures, spread.keys_values, spans))]
