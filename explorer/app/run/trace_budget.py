"""How much memory a trace will take, so that a run never grows past the person's budget unseen.

Every step records two kinds of arrays. Rows that grow with each new token
(the embedding, X, Q, K, V, the head outputs, the candidates) cost `per_token`
bytes a token. Attention rows hold one number per allowed (query, key) pair for
each query head of each layer (the weights A, stored without their masked zeros,
and the mask) and cost `per_pair` bytes a pair. A causal prefill of n tokens
records n(n+1)/2 pairs; a decoding step at length t records one row of t pairs.
So a trace of P prompt tokens followed by D decoded ones holds about

    per_token · (P + D)  +  per_pair · (P(P+1)/2 + Σ_{t=P+1}^{P+D} t)   bytes,

where A is stored. A prefill of at least ON_DEMAND_FROM (query, key) entries has its A rebuilt on
demand (`rebuilt_from`): it stores only Q, K, V and a mask rule, so its pairs cost nothing; shorter
prefills store their maps, and decoding steps always record their rows. Numpy only: it reads the Trace
and its ModelInfo, never the model.

The default budget is a share of the machine's memory (default_budget), so that the question is rare: on a
24 GB machine 6 GB, where SmolLM2-135M's 8,000-token trace takes about 0.94 GB (a prefill that rebuilds
A keeps no X: rebuilt_token).
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass

from explorer.core.attention_maps import ON_DEMAND_FROM
from explorer.core.trace import ModelInfo, StepRecord, Trace

MIN_BUDGET_MB, MAX_BUDGET_MB = 16, 1024 * 1024
MEMORY_SHARE = 4                   # the default budget is a quarter of the machine's memory...
DEFAULT_RANGE = (10 ** 9, 16 * 10 ** 9)   # ...but at least 1 GB (also where memory cannot be read), at most 16 GB
_ID_BYTES = 8                      # token ids and positions are int64


def physical_memory() -> int | None:
    """The machine's memory in bytes, or None where the system does not say."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, ValueError, OSError):
        return None


def default_budget(physical: int | None = None) -> int:
    """The trace memory budget nobody chose: physical / MEMORY_SHARE in whole 100 MB, within DEFAULT_RANGE
    (`physical` default: this machine's)."""
    physical = physical_memory() if physical is None else physical
    low, high = DEFAULT_RANGE
    if not physical:
        return low
    return min(max(physical // MEMORY_SHARE // 10 ** 8 * 10 ** 8, low), high)


DEFAULT_BUDGET = default_budget()     # this machine's, read once


@dataclass(frozen=True)
class TraceCost:
    """Bytes a trace takes per recorded token row and per (query, key) attention pair."""

    per_token: float
    per_pair: float                # a decoding step's bytes per (query, key) pair
    held: int = 0                  # bytes of the trace it was measured on (0 when estimated)
    prefill_pair: float | None = None  # a stored prefill's bytes per pair (None: per_pair)
    rebuilt_from: int | None = None    # (query, key) entries from which a prefill rebuilds A (None: never)
    rebuilt_token: float | None = None  # bytes a token of such a prefill, which keeps no X (None: per_token)

    @classmethod
    def measured(cls, trace: Trace, meter: "TraceMeter | None" = None) -> "TraceCost":
        """Read from the trace's own arrays: what the engine really records (a decoding row it has not
        recorded yet is estimated from the model's shape)."""
        meter = meter or TraceMeter()
        total, row_bytes, (decode_bytes, decode_pairs), (prefill_bytes, prefill_pairs) = meter.count(trace)
        first = trace.steps[0].layers[0].attn.q if trace.steps and trace.steps[0].layers else None
        itemsize = first.dtype.itemsize if first is not None else 4
        per_pair = decode_bytes / decode_pairs if decode_pairs else _row_pair_bytes(trace.model, itemsize)
        stored = prefill_pairs and prefill_bytes > 0
        return cls(per_token=row_bytes, per_pair=per_pair, held=total, rebuilt_from=ON_DEMAND_FROM,
                   prefill_pair=prefill_bytes / prefill_pairs if stored else None)

    @classmethod
    def estimated(cls, info: ModelInfo, itemsize: int = 4, on_demand: bool = True) -> "TraceCost":
        """Before the first run: count the arrays a step records, at `itemsize` bytes a number."""
        n_q, n_kv = info.n_heads, info.n_kv_heads
        per_layer = (info.d_model                      # X
                     + n_q * info.d_qk                 # Q (before RoPE and A V are derived, not stored)
                     + n_kv * info.d_qk                # K
                     + n_kv * info.d_v                 # V
                     + 1)                              # the residual norm
        numbers = info.d_model + info.n_layers * per_layer         # E[id], then every layer's rows
        without_x = (numbers - info.n_layers * info.d_model) * itemsize + 2 * _ID_BYTES   # a rebuilt prefill's
        # The top-k candidates are kept once per step, not per token: a prefill's count is left out.
        # The mask is a dense bool (n_new, n_kv): about 2 bytes per allowed pair of a causal prefill.
        return cls(per_token=numbers * itemsize + 2 * _ID_BYTES, per_pair=_row_pair_bytes(info, itemsize),
                   rebuilt_from=ON_DEMAND_FROM if on_demand else None,
                   rebuilt_token=float(without_x) if on_demand else None,
                   # a stored prefill keeps its mask as its rule: one weight per head of each layer a pair
                   prefill_pair=float(info.n_layers * info.n_heads * itemsize) if on_demand else None)

    # ----- projections --------------------------------------------------------------------
    @property
    def stored_pair_bytes(self) -> float:
        return self.per_pair if self.prefill_pair is None else self.prefill_pair

    def rebuilds(self, n_tokens: int) -> bool:
        """Whether a prefill of `n_tokens` has its A rebuilt on demand (its pairs cost nothing)."""
        return self.rebuilt_from is not None and n_tokens * n_tokens >= self.rebuilt_from

    def prefill_bytes(self, n_tokens: int) -> float:
        """A fresh trace holding a prompt of `n_tokens` (a causal triangle of pairs, where stored)."""
        if self.rebuilds(n_tokens):
            return (self.rebuilt_token or self.per_token) * n_tokens
        return self.per_token * n_tokens + self.stored_pair_bytes * n_tokens * (n_tokens + 1) / 2

    def growth(self, n_tokens: int, steps: int) -> float:
        """What `steps` more decoding steps add to a trace of `n_tokens`: Σ (per_token + per_pair · t)."""
        first, last = n_tokens + 1, n_tokens + steps
        pairs = (first + last) * steps / 2 if steps > 0 else 0
        return self.per_token * max(0, steps) + self.per_pair * pairs

    def max_prompt_tokens(self, budget: float) -> int:
        """The longest prompt whose prefill fits in `budget` bytes (0 if not even one token does)."""
        pair = self.stored_pair_bytes
        token = self.rebuilt_token or self.per_token
        rows_only = int(budget // token) if token > 0 else 2 ** 62
        if pair <= 0 or self.rebuilds(rows_only):      # that long a prompt rebuilds A: only its rows count
            return rows_only
        a, b = pair / 2, self.per_token + pair / 2     # prefill_bytes(n) = a n² + b n
        n = int((-b + math.sqrt(b * b + 4 * a * budget)) / (2 * a))
        while n > 0 and self.prefill_bytes(n) > budget:
            n -= 1
        while self.prefill_bytes(n + 1) <= budget:
            n += 1
        return n


class TraceMeter:
    """Counts a trace's bytes, each step record once: a new trace shares all but its last records."""

    def __init__(self) -> None:
        self._known: dict[int, tuple] = {}       # id(step) -> (step, bytes, attention bytes, pairs)

    def count(self, trace: Trace) -> tuple[int, float, tuple[int, int], tuple[int, int]]:
        """Bytes of the whole trace; the most bytes a step spent per new token on everything but its
        attention pairs (a decoding step's own overhead makes that more than a prefill's); and
        (bytes, pairs) of the attention weights and masks of the decoding steps, then of the others."""
        known, total, row_bytes = {}, 0, 0.0
        sums = {True: [0, 0], False: [0, 0]}     # decoding step or not -> [pair bytes, pairs]
        for step in trace.steps + ((trace.encoder,) if trace.encoder is not None else ()):
            entry = self._known.get(id(step))
            if entry is None or entry[0] is not step:
                entry = (step, *_step_bytes(step))
            known[id(step)] = entry
            total += entry[1]
            sums[step.kind == "decode"][0] += entry[2]
            sums[step.kind == "decode"][1] += entry[3]
            row_bytes = max(row_bytes, (entry[1] - entry[2]) / max(1, step.n_new))
        self._known = known
        return total, row_bytes, tuple(sums[True]), tuple(sums[False])


def _step_bytes(step: StepRecord) -> tuple[int, int, int]:
    whole = step.nbytes
    records = [record for layer in step.layers for record in (layer.attn, layer.cross) if record is not None]
    # Layers of one kind share their mask and key positions; a decoding step's grow with its row.
    # Weights rebuilt on demand (weights_packed None) and a mask kept as its rule take no pair bytes.
    shared = {id(array): getattr(array, "nbytes", 0) for record in records
              for array in (record.mask, record.kv_positions)}
    pair_bytes = sum(getattr(record.weights_packed, "nbytes", 0) for record in records) + sum(shared.values())
    pairs = int(step.layers[0].attn.mask.sum()) if step.layers else 0      # allowed pairs (a MaskRule counts them)
    return whole, pair_bytes, pairs


def _row_pair_bytes(info: ModelInfo, itemsize: int) -> float:
    """A decoding step's bytes per pair: one weight per query head of each layer, and per kind of layer
    (causal, sliding…) the mask's bool and the key's int64 position, which its layers share."""
    return info.n_layers * info.n_heads * itemsize + (1 + _ID_BYTES) * max(1, len(set(info.layer_kinds)))


def human_bytes(n: float) -> str:
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{int(n)} bytes"
