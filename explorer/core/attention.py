"""Causal self-attention with N_KV <= N_Q key/value heads (MHA, GQA, MQA), written like the math.

    Q_h = X W_h^Q,  K_g = X W_g^K,  V_g = X W_g^V      (g = the K/V head query head h reads)
    S_h = Q_h K_g^T * scale  (+ mask: causal, or causal within a sliding window of W)
    A_h = softmax(S_h),  O_h = A_h V_g,  Y = concat_h(O_h) W^O

Vaswani et al. 2017 (MHA); Shazeer 2019 (MQA); Ainslie et al. 2023 (GQA).
"""
from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from explorer.core.rope import Rotary, RotationTable
from explorer.core.stacked import stack_rows


class StepContext:
    """What every layer of one forward pass shares: positions, RoPE angles and masks (memoized)."""

    def __init__(self, positions: np.ndarray, device, dtype, rotaries: dict[str, Rotary]):
        self.positions_np = positions                                            # (T,)
        self.positions = torch.as_tensor(positions, dtype=torch.long, device=device)
        self.dtype = dtype
        self.rotaries = rotaries
        self._rotations: dict[str, RotationTable] = {}
        self._masks: dict[tuple, tuple[np.ndarray, torch.Tensor | None]] = {}

    def rotation(self, kind: str) -> RotationTable:
        """This step's RoPE angles for one table ("global" or "local"), shared by its layers."""
        if kind not in self._rotations:
            self._rotations[kind] = self.rotaries[kind].table(self.positions, self.dtype)
        return self._rotations[kind]

    def mask(self, kv_positions: np.ndarray, window: int | None) -> tuple[np.ndarray, torch.Tensor | None, np.ndarray]:
        """(T, n_kv) bool, True where query i may attend key j, and the torch tensor of the hidden
        entries (not visible), None when nothing is hidden.

        Also returns one shared copy of kv_positions, so that layers of one kind
        record the same array instead of one each.
        """
        key = (int(kv_positions[0]), len(kv_positions), window)
        if key not in self._masks:
            query = self.positions_np[:, None]                                  # (T, 1)
            visible = kv_positions[None, :] <= query                            # (T, n_kv)
            if window:
                visible &= kv_positions[None, :] > query - window
            as_tensor = None if visible.all() else torch.from_numpy(~visible).to(self.positions.device)
            self._masks[key] = (visible, as_tensor, kv_positions)
        return self._masks[key]


def attention_weights(scores: torch.Tensor, hidden: torch.Tensor | None, softcap: float | None) -> torch.Tensor:
    """A = softmax(S) over the visible keys (`hidden`: True where masked); masked entries come out exactly 0.

    `scores` is a fresh tensor of the caller's and is overwritten (no copy of an (N_Q, T, n_kv) block).
    """
    if softcap:
        scores = torch.tanh(scores / softcap) * softcap
    if hidden is not None:
        scores = scores.masked_fill_(hidden, float("-inf"))
    weights = torch.softmax(scores, dim=-1, dtype=torch.float32)
    return weights if scores.dtype == torch.float32 else weights.to(scores.dtype)


def grouped_scores(q: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
    """Q_h K_g^T for every query head h against its K/V head g, without copying K per head.

    q: (N_Q, T, d), keys: (N_KV, n_kv, d) -> (N_Q, T, n_kv)
    """
    n_q, t, d = q.shape
    n_kv = keys.shape[0]
    grouped = q.reshape(n_kv, (n_q // n_kv) * t, d)                             # (N_KV, group*T, d)
    return torch.bmm(grouped, keys.transpose(1, 2)).view(n_q, t, -1)            # (N_Q, T, n_kv)


def grouped_mix(weights: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
    """O_h = A_h V_g.  weights: (N_Q, T, n_kv), values: (N_KV, n_kv, d_v) -> (N_Q, T, d_v)"""
    n_q, t, n = weights.shape
    n_kv = values.shape[0]
    grouped = weights.reshape(n_kv, (n_q // n_kv) * t, n)                       # (N_KV, group*T, n_kv)
    return torch.bmm(grouped, values).view(n_q, t, -1)


class SelfAttention(nn.Module):
    """Multi-head self-attention; GQA/MQA when N_KV < N_Q; optional q/k norm, bias, window, softcap."""

    def __init__(self, config, layer: int, norm_class):
        super().__init__()
        d, d_head = config.d_model, config.d_head
        self.layer = layer
        self.n_heads, self.n_kv_heads, self.d_head = config.n_heads, config.n_kv_heads, d_head
        self.wq = nn.Linear(d, self.n_heads * d_head, bias=config.qkv_bias)      # W^Q
        self.wk = nn.Linear(d, self.n_kv_heads * d_head, bias=config.qkv_bias)   # W^K
        self.wv = nn.Linear(d, self.n_kv_heads * d_head, bias=config.qkv_bias)   # W^V
        self.wo = nn.Linear(self.n_heads * d_head, d, bias=config.o_bias)        # W^O
        self.q_norm = norm_class(d_head, config.norm_eps) if config.qk_norm else None
        self.k_norm = norm_class(d_head, config.norm_eps) if config.qk_norm else None
        kind = config.layer_kinds[layer]
        self.window = config.sliding_window if kind == "sliding" else None
        self.scale = config.scale_of_layer(layer)
        self.softcap = config.attn_softcap
        self.rope = None if config.positional != "rope" else (
            "local" if kind == "sliding" and config.rope_local else "global")
        self.stacked = None             # [W^Q; W^K; W^V] once fuse() has run (a built model, not training)

    def fuse(self) -> None:
        self.stacked = stack_rows((self.wq, self.wk, self.wv))

    def project(self, x: torch.Tensor) -> torch.Tensor:
        """[X W^Q | X W^K | X W^V] as (T, N_Q + 2 N_KV, d_head): one matmul once the rows are stacked."""
        t = x.shape[0]
        if self.stacked is None:
            qkv = torch.cat((self.wq(x), self.wk(x), self.wv(x)), dim=-1)
        else:
            qkv = F.linear(x, *self.stacked)
        return qkv.view(t, self.n_heads + 2 * self.n_kv_heads, self.d_head)

    def forward(self, x: torch.Tensor, step: StepContext, cache=None, capture=None) -> torch.Tensor:
        t = x.shape[0]                                                           # x: (T, d_model)
        n_q, n_kv = self.n_heads, self.n_kv_heads
        qkv = self.project(x)                                                    # (T, N_Q + 2 N_KV, d_head)
        q, k, v = qkv.split((n_q, n_kv, n_kv), dim=1)                            # Q = X W^Q, K = X W^K, V = X W^V
        if self.q_norm is not None:
            q, k = self.q_norm(q), self.k_norm(k)
        q_pre, k_pre = q, k
        if self.rope is not None:                                                # RoPE: rotate by position
            rotary, table = step.rotaries[self.rope], step.rotation(self.rope)
            if self.q_norm is None:                                              # Q and K side by side: one op
                q, k = rotary.rotate(qkv[:, : n_q + n_kv], table).split((n_q, n_kv), dim=1)
            else:
                q, k = rotary.rotate(q, table), rotary.rotate(k, table)
        q, k, v = q.transpose(0, 1), k.transpose(0, 1), v.transpose(0, 1)        # (N_Q | N_KV, T, d_head)

        if cache is None:
            keys, values, kv_positions = k, v, step.positions_np
        else:
            keys, values, kv_positions = cache.update(k, v)                      # (N_KV, n_kv, d)
        visible, hidden, kv_positions = step.mask(kv_positions, self.window)
        scores = grouped_scores(q, keys).mul_(self.scale)                        # S: (N_Q, T, n_kv)
        weights = attention_weights(scores, hidden, self.softcap)                # A: (N_Q, T, n_kv)
        heads = grouped_mix(weights, values)                                     # O_h = A_h V: (N_Q, T, d_v)
        wo = self.wo
        y = F.linear(heads.transpose(0, 1).reshape(t, -1), wo.weight, wo.bias)    # concat_h O_h W^O: (T, d_model)

        if capture is not None:
            rotated = self.rope is not None
            capture.record(self.layer, q=q, k=k, v=v, weights=weights, head_out=heads,
                           q_pre_rope=q_pre.transpose(0, 1) if rotated else None,
                           k_pre_rope=k_pre.transpose(0, 1) if rotated else None,
                           mask=visible, kv_positions=kv_positions, scale=self.scale, softcap=self.softcap)
        return y
