"""What each head does on the user's own text: per head over its query rows i,

    entropy   = mean_i  -sum_j A_ij ln A_ij               (nats; 0 = one key, ln(i+1) = uniform)
    distance  = mean_i   sum_j A_ij (pos_i - pos_j)       (how far back it looks, in tokens)
    first     = mean_i   A_i0                             (the share on the first token)

Numpy over a Trace, so that the app's head atlas computes it itself (head_scores.py has the scores
on repeated random tokens, which need the model).

Each mean is a sum over records (a prefill, then each decoding step's row) divided by the rows, so
the sums are kept per record (`DescriptionSums`): a trace one step longer shares its prefill's record
and computes only the new row. A record whose A is rebuilt on demand (a long prompt) is read BLOCK
query rows of one head at a time, from Q and K by the model's own operations (attention_maps.scores,
normalised) over the keys the block can see: a long trace holds one BLOCK x T block, never T x T.
"""
from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass
from typing import Callable

import numpy as np

from explorer.core import attention_maps
from explorer.core.trace import AttentionRecord, Trace

NAMES = ("entropy", "distance", "first_token")
BLOCK = attention_maps.ROW_BLOCK          # query rows per block of an on-demand map
FLOOR = np.float32(-3e38)                 # S at a masked key in softmax_block_sums: exp gives 0, 0 * FLOOR is 0


@dataclass(frozen=True)
class HeadDescription:
    """Per layer and head (L, N_Q), on a trace's own tokens: entropy, mean distance, share on the first.
    A layer not described yet (a long trace still being read) is a row of NaN."""

    entropy: np.ndarray          # (L, N_Q) nats
    distance: np.ndarray         # (L, N_Q) tokens
    first_token: np.ndarray      # (L, N_Q) in [0, 1]

    @property
    def layers_done(self) -> int:
        """How many layers are described (their rows are finite)."""
        return int(np.isfinite(self.entropy).all(axis=1).sum())


class Cancelled(Exception):
    """The reading stopped because its `cancel` was set."""


def _stopped(cancel) -> bool:
    """`cancel` is None, a callable or anything with is_set() (a threading.Event)."""
    if cancel is None:
        return False
    return bool(cancel.is_set() if hasattr(cancel, "is_set") else cancel())


def block_sums(weights: np.ndarray, query_positions: np.ndarray, key_positions: np.ndarray) -> np.ndarray:
    """(3,) float64: sum over the block's rows of -sum_j A ln A, sum_j A (pos_i - pos_j) and A_i0.

    weights: (r, c) A of r query rows over c keys (0 where masked); positions (r,) and (c,).
    The distance is taken from the block's first query position p0, sum_j A_ij (p0 - pos_j) + (pos_i - p0)
    sum_j A_ij, so that float32 never subtracts two large positions.
    """
    logs = np.log(weights, out=np.zeros_like(weights), where=weights > 0)            # (r, c)
    entropy = -np.multiply(weights, logs, out=logs).sum(axis=1).sum(dtype=np.float64)
    origin = int(query_positions[0]) if query_positions.size else 0
    back = (origin - key_positions).astype(np.float32)                                # (c,)
    row_sums = weights.sum(axis=1)                                                    # (r,)
    distance = (weights @ back).sum(dtype=np.float64) + float(((query_positions - origin) * row_sums).sum())
    first = weights[:, key_positions == 0].sum(dtype=np.float64)
    return np.array([entropy, distance, first])


@dataclass(frozen=True)
class BlockKeys:
    """The keys a block of query rows sees, worked out once for every head: the span of columns holding
    them (a causal block sees none past its last query, a sliding one none before its first's window),
    and within it the columns some row cannot see (the causal diagonal), where the mask is applied."""

    span: slice                  # the record's columns lo..hi
    visible: np.ndarray          # (r, hi - lo) bool
    positions: np.ndarray        # (hi - lo,) key positions
    cut: slice | None            # the span's columns some row cannot see; None: every row sees every key
    hidden: np.ndarray | None    # (r, len(cut)) bool, ~visible there
    seen: np.ndarray             # (r,) rows that see at least one key
    columns: np.ndarray          # (hi - lo, 3) float32: p0 - pos_j, 1, [pos_j = 0]  (p0: the first query's)


def block_keys(visible: np.ndarray, key_positions: np.ndarray, origin: int) -> BlockKeys:
    """BlockKeys of rows whose mask is `visible` (r, n_kv) over keys at `key_positions` (n_kv,)."""
    seen_columns = np.flatnonzero(visible.any(axis=0))
    span = slice(int(seen_columns[0]), int(seen_columns[-1]) + 1) if seen_columns.size else slice(0, 0)
    inside, positions = visible[:, span], key_positions[span]
    partial = np.flatnonzero(~inside.all(axis=0))
    cut = slice(int(partial[0]), int(partial[-1]) + 1) if partial.size else None
    columns = np.stack([origin - positions, np.ones_like(positions), positions == 0], axis=1).astype(np.float32)
    return BlockKeys(span, inside, positions, cut, None if cut is None else ~inside[:, cut], inside.any(axis=1),
                     columns)


def softmax_block_sums(s: np.ndarray, keys: BlockKeys, temperature: float, query_positions: np.ndarray) -> np.ndarray:
    """block_sums of A = softmax(S / tau) over the visible keys, from S (r, c) without forming A. Overwrites `s`.

    With S'_ij = S_ij / tau - m_i (m_i the row's visible maximum), e = exp(S'), Z_i = sum_j e_ij, so that
    A = e / Z and ln A = S' - ln Z:
        -sum_j A_ij ln A_ij = ln Z_i - sum_j e_ij S'_ij / Z_i
        sum_j A_ij (p0 - pos_j) = (e (p0 - pos))_i / Z_i,     A_i0 = e_i0 / Z_i
    the three numerators and Z in one product e [p0 - pos, 1, [pos = 0]]. Masked keys hold FLOOR, whose
    exp is 0 and whose product with 0 is 0 (-inf would give NaN).
    """
    if temperature != 1.0:
        s /= np.float32(temperature)
    if keys.cut is not None:
        np.copyto(s[:, keys.cut], FLOOR, where=keys.hidden)
    np.subtract(s, s.max(axis=1, keepdims=True), out=s)                               # S' <= 0
    e = np.exp(s)                                                                     # (r, c)
    back, z, first = (e @ keys.columns).T                                             # (3, r)
    seen = keys.seen & (z > 0)                                                        # a row that sees nothing: 0
    z = np.where(seen, z, 1.0)
    entropy = np.log(z) - np.einsum("ij,ij->i", e, s) / z
    distance = back / z + (query_positions - query_positions[0])
    rows = np.stack([entropy, distance, first / z]).astype(np.float64)                # (3, r)
    return np.where(seen, rows, 0.0).sum(axis=1)


def _on_demand_sums(record: AttentionRecord, positions: np.ndarray, cancel) -> np.ndarray:
    """(3, N_Q) sums of a record whose A is rebuilt from Q and K, BLOCK rows of one head at a time."""
    sums = np.zeros((3, record.n_heads))
    softmax = record.kernel.name == "exp"
    for first in range(0, record.n_new, BLOCK):
        last = min(first + BLOCK, record.n_new)
        rows = positions[first:last]
        keys = block_keys(attention_maps.mask_rows(record.mask, first, last), record.kv_positions, int(rows[0]))
        for head in range(record.n_heads):
            if _stopped(cancel):
                raise Cancelled
            s = attention_maps.scores(record.q[head, first:last], record.k[record.kv_head_of(head), keys.span],
                                      record.scale, record.weight_softcap)           # (r, hi - lo)
            if softmax:
                sums[:, head] += softmax_block_sums(s, keys, record.kernel.temperature, rows)
            else:
                weights = attention_maps.normalised(s, keys.visible, record.kernel)
                sums[:, head] += block_sums(weights, rows, keys.positions)
    return sums


def record_sums(record: AttentionRecord, positions: np.ndarray, cancel=None) -> np.ndarray:
    """(3, N_Q) float64: each quantity summed over the record's query rows, per head.
    positions: (n_new,) the query positions. Raises Cancelled when `cancel` is set mid-way (checked before each
    head, whether its map is stored or rebuilt)."""
    if record.on_demand:
        return _on_demand_sums(record, positions, cancel)
    sums = np.zeros((3, record.n_heads))
    for head in range(record.n_heads):
        if _stopped(cancel):
            raise Cancelled
        sums[:, head] = block_sums(record.weights_of(head).astype(np.float32), positions, record.kv_positions)
    return sums


class DescriptionSums:
    """Each record's sums, kept while the record lives (a record is told apart by identity, held weakly).
    `computed` counts the records read so far. Safe to use from a background thread and the GUI's."""

    def __init__(self) -> None:
        self._sums: dict[int, tuple[weakref.ref, np.ndarray]] = {}
        self._lock = threading.Lock()
        self.computed = 0

    def get(self, record: AttentionRecord) -> np.ndarray | None:
        with self._lock:
            entry = self._sums.get(id(record))
            return entry[1] if entry is not None and entry[0]() is record else None

    def of(self, record: AttentionRecord, positions: np.ndarray, cancel=None) -> np.ndarray:
        """The record's sums, read once."""
        sums = self.get(record)
        if sums is None:
            sums = record_sums(record, positions, cancel)
            with self._lock:
                self._sums = {key: entry for key, entry in self._sums.items() if entry[0]() is not None}
                self._sums[id(record)] = (weakref.ref(record), sums)
                self.computed += 1
        return sums


def _layer_rows(trace: Trace, layer: int, upto_step: int | None, sums: DescriptionSums | None, cancel,
                read_below: int | None = None) -> np.ndarray | None:
    """(3, N_Q) means of one layer over every query row. With `read_below`, only records of fewer entries
    than that are read (a decoding step's row): None where a larger one is not kept yet."""
    steps = trace.steps if upto_step is None else trace.steps[: upto_step + 1]
    total, rows = np.zeros((3, trace.model.n_heads)), 0
    for step in steps:
        record = step.layers[layer].attn
        if read_below is not None:
            part = sums.get(record)
            if part is None and record.n_heads * record.n_new * record.n_kv >= read_below:
                return None
            part = sums.of(record, step.positions) if part is None else part
        else:
            part = sums.of(record, step.positions, cancel) if sums is not None else \
                record_sums(record, step.positions, cancel)
        total += part
        rows += step.n_new
    return total / max(1, rows)


def describe_heads(trace: Trace, upto_step: int | None = None, sums: DescriptionSums | None = None,
                   cancel=None, on_layer: Callable[[int], None] | None = None) -> HeadDescription:
    """Entropy, mean attention distance and share on the first token of every head, on the trace's text,
    layer by layer (`on_layer(l)` once layer l is described). Raises Cancelled when `cancel` is set (checked
    before each layer and each head)."""
    per_layer = []
    for layer in range(trace.model.n_layers):
        if _stopped(cancel):
            raise Cancelled
        per_layer.append(_layer_rows(trace, layer, upto_step, sums, cancel))
        if on_layer is not None:
            on_layer(layer)
    return _description(per_layer, trace.model.n_heads)


def described_so_far(trace: Trace, sums: DescriptionSums, upto_step: int | None = None,
                     read_below: int = 0) -> HeadDescription:
    """What `sums` already holds for the trace: the layers whose every record is kept, NaN elsewhere;
    records of fewer than `read_below` entries (query x key x head) are read on the spot."""
    per_layer = [_layer_rows(trace, layer, upto_step, sums, None, read_below=read_below)
                 for layer in range(trace.model.n_layers)]
    return _description(per_layer, trace.model.n_heads)


def entries_to_read(trace: Trace, sums: DescriptionSums | None = None, upto_step: int | None = None) -> int:
    """How many query x key entries of A describing the trace still means reading (its cost)."""
    steps = trace.steps if upto_step is None else trace.steps[: upto_step + 1]
    return sum(record.n_heads * record.n_new * record.n_kv for step in steps for record in
               (layer.attn for layer in step.layers) if sums is None or sums.get(record) is None)


def _description(per_layer: list[np.ndarray | None], n_heads: int) -> HeadDescription:
    rows = np.stack([np.full((3, n_heads), np.nan) if part is None else part for part in per_layer], axis=1)
    return HeadDescription(*rows)                                         # rows: (3, L, N_Q)
