"""Path patching at run time: a sender head's output from another run, reaching only one receiver head.

    delta = (O_s' - O_s) W^O_s          at the sender's layer (W^O_s: the sender's columns of W^O)
    X'    = Norm(h + delta)             at the receiver's layer, before its attention
    Q'_r  = X' W^Q_r  (or K'_g, V'_g)   the receiver head's input alone; every other head reads X = Norm(h)

O_s is the sender's output in this run (after the run's other edits), O_s' the patch's values. The
attention core (attention.py) calls send() where O is formed and read() where Q, K, V are projected;
Block.forward calls receive() with the residual stream h entering the receiver's block.
"""
from __future__ import annotations

import torch

from explorer.core.errors import ExplorerError
from explorer.core.intervention_parts import rows_of

SANDWICH = "path patching needs the attention output added to the residual as it is; this model normalises it first"


def send(site, heads: torch.Tensor, wo, step) -> None:
    """Keep, for each path whose sender is in this layer, delta = (O_s' - O_s) W^O_s over its rows.

    heads: O (N_Q, T, d_v) of this layer as the model goes on with it."""
    for patch in step.run.intervention.path_patches:
        if patch.sender_layer != site.layer:
            continue
        d_v = heads.shape[-1]
        rows = rows_of(step.positions_np, step.sequences, patch)
        own = heads[patch.sender_head, torch.from_numpy(rows)]                                 # O_s: (n, d_v)
        values = torch.as_tensor(patch.values[step.positions_np[rows] - patch.start], dtype=own.dtype,
                                 device=own.device)
        if values.shape[-1] != d_v:
            raise ExplorerError(f"the sender values have rows of {values.shape[-1]}; head outputs have {d_v}")
        columns = wo.weight[:, patch.sender_head * d_v:(patch.sender_head + 1) * d_v]          # W^O_s: (d, d_v)
        step.run.path_deltas[id(patch)] = (rows, (values - own) @ columns.T)                   # (n, d)


def receive(block, h: torch.Tensor, step) -> None:
    """X' = Norm(h + delta) for each path this block's heads receive, kept on the run for read()."""
    for patch in step.run.intervention.path_patches:
        if patch.receiver_layer != block.layer:
            continue
        if block.post_attn_norm is not None:
            raise ExplorerError(SANDWICH)
        rows, delta = step.run.path_deltas.get(id(patch), (None, None))
        shifted = h.clone()
        if rows is not None and rows.size:
            shifted[torch.from_numpy(rows)] += delta
        step.run.path_inputs[id(patch)] = block.attn_norm.forward(shifted)                   # X': (T, d)


def read(attention, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, site, step):
    """Q, K, V (T, heads, d) with each received path's head projected from its X' instead of X."""
    parts = {"q": q.clone(), "k": k.clone(), "v": v.clone()}
    n_q, n_kv = attention.n_heads, attention.n_kv_heads
    for patch in site.plan.paths:
        limit = n_q if patch.which == "q" else n_kv
        if not 0 <= patch.receiver_head < limit:
            raise ExplorerError(f"receiver head {patch.receiver_head} of {patch.which} does not exist: "
                                f"layer {patch.receiver_layer} has {limit}")
        q2, k2, v2 = attention.project(step.run.path_inputs[id(patch)]).split((n_q, n_kv, n_kv), dim=1)
        if attention.q_norm is not None:
            q2, k2 = attention.q_norm(q2), attention.k_norm(k2)
        own = {"q": q2, "k": k2, "v": v2}[patch.which]
        parts[patch.which][:, patch.receiver_head] = own[:, patch.receiver_head]
    return parts["q"], parts["k"], parts["v"]
