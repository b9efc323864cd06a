"""What each head does on the user's own text: per head over its query rows i,

    entropy   = mean_i  -sum_j A_ij ln A_ij               (nats; 0 = one key, ln(i+1) = uniform)
    distance  = mean_i   sum_j A_ij (pos_i - pos_j)       (how far back it looks, in tokens)
    first     = mean_i   A_i0                             (the share on the first token)

Numpy over a Trace, so that the app's head atlas computes it itself (head_scores.py has the scores
on repeated random tokens, which need the model).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from explorer.core.trace import Trace


@dataclass(frozen=True)
class HeadDescription:
    """Per layer and head (L, N_Q), on a trace's own tokens: entropy, mean distance, share on the first."""

    entropy: np.ndarray          # (L, N_Q) nats
    distance: np.ndarray         # (L, N_Q) tokens
    first_token: np.ndarray      # (L, N_Q) in [0, 1]


def describe_heads(trace: Trace, upto_step: int | None = None) -> HeadDescription:
    """Entropy, mean attention distance and share on the first token of every head, on the trace's text.

    Read record by record (a prefill's map, then each decoding step's row), so that nothing dense
    is kept: a long trace costs one layer's prefill map at a time.
    """
    steps = trace.steps if upto_step is None else trace.steps[: upto_step + 1]
    out = {name: [] for name in ("entropy", "distance", "first_token")}
    for layer in range(trace.model.n_layers):
        sums, rows = np.zeros((3, trace.model.n_heads)), 0
        for step in steps:
            record = step.layers[layer].attn
            weights = record.weights.astype(np.float32)                          # (N_Q, n_new, n_kv)
            logs = np.log(np.where(weights > 0, weights, 1.0))
            back = step.positions[:, None] - record.kv_positions[None, :]         # (n_new, n_kv): pos_i - pos_j
            sums[0] += -(weights * logs).sum(axis=(1, 2))
            sums[1] += (weights * back).sum(axis=(1, 2))
            sums[2] += weights[:, :, record.kv_positions == 0].sum(axis=(1, 2))
            rows += step.n_new
        for name, total in zip(out, sums):
            out[name].append(total / max(1, rows))
    return HeadDescription(**{name: np.stack(values) for name, values in out.items()})
