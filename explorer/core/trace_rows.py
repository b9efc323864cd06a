"""One query row of a trace's attention, and a small window of its map, without the T x T arrays.

Show the work needs row i of the mask M and of A_h, and O_h at row i; at 8,000 tokens the dense routes
(Trace.mask, Trace.attention_head, Trace.head_out without recorded outputs) build (T, T) arrays for that one
row. These read the record whose queries hold row i: its mask rule's row, its weights_row (rebuilt from
Q and K where the weights are on demand), and O_h,i = A_i V_h. Imports numpy and the trace only.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from explorer.core.attention_maps import mask_rows
from explorer.core.trace import AttentionRecord, Trace

WINDOW = 48          # rows and columns of the map around a cell that a long trace's derivation draws


def record_of_row(trace: Trace, layer: int, row: int, upto: int) -> tuple[AttentionRecord, int]:
    """The attention record of `layer` whose new query rows hold trace row `row`, and the row within it."""
    offset = 0
    for step in trace.steps[: upto + 1]:
        if row < offset + step.n_new:
            return step.layers[layer].attn, row - offset
        offset += step.n_new
    raise IndexError(f"row {row} is past the trace's {offset} rows")


def n_keys(trace: Trace, upto: int) -> int:
    """T_kv: the key positions of a decoder's trace as of step `upto`."""
    return sum(step.n_new for step in trace.steps[: upto + 1])


def mask_row(trace: Trace, layer: int, row: int, upto: int) -> np.ndarray:
    """M_i: (T_kv,) bool, True where query row `row` may attend the key at each position."""
    record, local = record_of_row(trace, layer, row, upto)
    out = np.zeros(n_keys(trace, upto), dtype=bool)
    out[record.kv_positions] = mask_rows(record.mask, local, local + 1)[0]
    return out


def head_out_row(trace: Trace, layer: int, head: int, row: int, upto: int,
                 weights: np.ndarray | None = None) -> np.ndarray:
    """O_h at row i as the model went on with it: the recorded output (every head's, or one an experiment
    replaced), else A_i V_h from the recorded row of weights (`weights`, if the caller has it): (d_v,) float64."""
    record, local = record_of_row(trace, layer, row, upto)
    recorded = record.recorded_head_out(head)
    if recorded is not None:
        return recorded[local].astype(np.float64)
    values = trace.v(layer, trace.kv_head_of(head), upto).astype(np.float64)          # (T_kv, d_v)
    if weights is None:
        weights = trace.attention_row(layer, head, row, upto)
    return np.asarray(weights, dtype=np.float64)[: values.shape[0]] @ values


@dataclass(frozen=True)
class Window:
    """Rows top.. and columns left.. of one head's A, masked cells NaN: the part of a long map drawn."""

    matrix: np.ndarray           # (rows, cols) float32
    top: int
    left: int
    extent: tuple[int, int]      # (T_q, T_kv) of the whole map


def window(trace: Trace, layer: int, head: int, row: int, column: int, upto: int, size: int = WINDOW) -> Window:
    """The `size` x `size` cells of A_h around (row, column), ending at the row (a causal map's rows above
    it see the same keys), each row its own weights_row: O(size T d), never (T, T)."""
    t = n_keys(trace, upto)
    top = max(0, min(row - size + 1, t - size))
    left = max(0, min(column - size // 2, t - size))
    rows = range(top, min(t, top + size))
    matrix = np.stack([np.where(mask_row(trace, layer, r, upto), trace.attention_row(layer, head, r, upto), np.nan)
                       [left: left + size] for r in rows]).astype(np.float32)         # (rows, cols)
    return Window(matrix=matrix, top=top, left=left, extent=(t, t))
