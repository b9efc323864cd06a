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

from explorer.core import fused_attention, path_patching
from explorer.core import kernel as kernels
from explorer.core.attention_maps import MaskRule
from explorer.core.capture import AttentionCapture
from explorer.core.intervention import SOFTMAX, Kernel
from explorer.core.intervention_run import InterventionRun, Site
from explorer.core.rope import Rotary, RotationTable
from explorer.core.stacked import stack_rows, store_by_columns
from explorer.core.visibility import Visibility


class StepContext:
    """What every layer of one forward pass shares: positions, RoPE angles, masks (memoized) and
    the intervention run (None: the model as it is)."""

    def __init__(self, positions: np.ndarray, device, dtype, rotaries: dict[str, Rotary], run=None,
                 sequences: np.ndarray | None = None):
        self.positions_np = positions                                            # (T,)
        self.sequences = sequences      # (T,) which of several packed sequences each row is (patching.py)
        self.positions = torch.as_tensor(positions, dtype=torch.long, device=device)
        self.dtype = dtype
        self.rotaries = rotaries
        self.run: InterventionRun | None = run
        self._rotations: dict[str, RotationTable] = {}
        self._masks: dict[tuple, Visibility] = {}

    def rotation(self, kind: str) -> RotationTable:
        """This step's RoPE angles for one table ("global" or "local"), shared by its layers."""
        if kind not in self._rotations:
            self._rotations[kind] = self.rotaries[kind].table(self.positions, self.dtype)
        return self._rotations[kind]

    def mask(self, kv_positions: np.ndarray, window: int | None) -> Visibility:
        """Which of the keys at `kv_positions` each query sees: causal, within `window` if given.

        Memoized, so that layers of one kind record the same mask and kv_positions arrays.
        """
        key = (int(kv_positions[0]), len(kv_positions), window)
        if key not in self._masks:
            if self.sequences is None:
                rule = MaskRule.of(np.array(self.positions_np), kv_positions, window)   # causal, within W
                self._masks[key] = Visibility.by(rule, self.positions.device)
            else:                                                                # packed: each prompt's own rule
                self._masks[key] = fused_attention.packed_visibility(self.positions_np, kv_positions, self.sequences,
                                                                     window, self.positions.device)
        return self._masks[key]

    def site(self, layer: int, n_heads: int, where: str = "self") -> Site | None:
        return None if self.run is None else self.run.site(layer, n_heads, where)


def attention_weights(scores: torch.Tensor, hidden: torch.Tensor | None, softcap: float | None) -> torch.Tensor:
    """A = softmax(S) over the visible keys (`hidden`: True where masked); masked entries come out exactly 0
    (kernel.weights under the model's own kernel: softcap, then torch's softmax in float32).

    `scores` is a fresh tensor of the caller's and is overwritten (no copy of an (N_Q, T, n_kv) block).
    """
    return kernels.weights(scores, hidden, SOFTMAX, softcap)


def kernel_weights(scores: torch.Tensor, seen: Visibility, softcap: float | None, kernel: Kernel) -> torch.Tensor:
    """A = Z^-1 f_kappa(S) over the visible entries (kernel.weights); masked ones contribute 0; a row with Z = 0 is 0.

    exp: the model's softmax (its softcap, then S / tau); linear: f(S) = S; relu: f(S) = max(0, S).
    """
    weights = kernels.weights(scores, seen.hidden, kernel, kernels.kernel_softcap(softcap, kernel))
    empty = kernel.name == "exp" and (seen.padding is not None                 # a softmax over no key: 0/0
                                      or not seen.mask.any(axis=1).all())      # (`mask` counts no padding)
    return weights.nan_to_num_(0.0) if empty else weights


def attend(scores: torch.Tensor, seen: Visibility, mix, softcap: float | None = None, site=None):
    """The one attention core every kind goes through, the one place interventions are read:

        A_h = Z^-1 f_kappa(S_h) over the visible keys,  O_h = A_h V_h  (= mix(A)).

    scores: S = Q K^T * scale, (..., N_Q, T, n_kv), a fresh tensor (overwritten);
    mix(A) -> O (..., N_Q, T, d_v). Returns A, O and the visibility used (edits hide entries).
    """
    if site is None:
        weights = attention_weights(scores, seen.hidden, softcap)
        return weights, mix(weights), seen
    seen = seen.without(site.plan.hidden(seen.queries, seen.keys))
    weights = site.patterns(kernel_weights(scores, seen, softcap, site.plan.kernel), seen)
    return weights, site.head_outputs(mix(weights), seen), seen


def grouped_scores(q: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
    """Q_h K_g^T for every query head h against its K/V head g, without copying K per head.

    q: (..., N_Q, T, d), keys: (..., N_KV, n_kv, d) -> (..., N_Q, T, n_kv)   (...: a batch of prompts, or none)
    """
    *batch, n_q, t, d = q.shape
    n_kv = keys.shape[-3]
    grouped = q.reshape(*batch, n_kv, (n_q // n_kv) * t, d)                      # (..., N_KV, group*T, d)
    return torch.matmul(grouped, keys.transpose(-1, -2)).view(*batch, n_q, t, -1)   # (..., N_Q, T, n_kv)


def grouped_mix(weights: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
    """O_h = A_h V_g.  weights: (..., N_Q, T, n_kv), values: (..., N_KV, n_kv, d_v) -> (..., N_Q, T, d_v)"""
    *batch, n_q, t, n = weights.shape
    n_kv = values.shape[-3]
    grouped = weights.reshape(*batch, n_kv, (n_q // n_kv) * t, n)                # (..., N_KV, group*T, n_kv)
    return torch.matmul(grouped, values).view(*batch, n_q, t, -1)


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
        store_by_columns(self.wo)

    def project(self, x: torch.Tensor) -> torch.Tensor:
        """[X W^Q | X W^K | X W^V] as (T, N_Q + 2 N_KV, d_head): one matmul once the rows are stacked."""
        t = x.shape[0]
        if self.stacked is None:
            qkv = torch.cat((self.wq(x), self.wk(x), self.wv(x)), dim=-1)
        else:
            qkv = F.linear(x, *self.stacked)
        return qkv.view(t, self.n_heads + 2 * self.n_kv_heads, self.d_head)

    def _patched_inputs(self, q, k, v, site: Site, step: StepContext):
        """Q, K, V with the input patches' rows written, and each received path's head projected from
        its X' = Norm(h + delta) (path_patching.read)."""
        q, k, v = site.inputs(q, k, v, step)
        return path_patching.read(self, q, k, v, site, step) if site.plan.paths else (q, k, v)

    def _attend(self, site: Site | None):
        """S = Q K^T * scale, then attend: (A, O, the visibility attended) of q (..., N_Q, T, d) against
        keys and values (..., N_KV, n_kv, d)."""
        def core(q, keys, values, seen):
            scores = grouped_scores(q, keys).mul_(self.scale)                    # S: (..., N_Q, T, n_kv)
            return attend(scores, seen, lambda a: grouped_mix(a, values), self.softcap, site)  # O_h = A_h V
        return core

    def forward(self, x: torch.Tensor, step: StepContext, cache=None, capture=None) -> torch.Tensor:
        t = x.shape[0]                                                           # x: (T, d_model)
        n_q, n_kv = self.n_heads, self.n_kv_heads
        qkv = self.project(x)                                                    # (T, N_Q + 2 N_KV, d_head)
        q, k, v = qkv.split((n_q, n_kv, n_kv), dim=1)                            # Q = X W^Q, K = X W^K, V = X W^V
        if self.q_norm is not None:
            q, k = self.q_norm(q), self.k_norm(k)
        site = step.site(self.layer, n_q)
        patched = site is not None and bool(site.plan.inputs or site.plan.paths)
        if patched:
            q, k, v = self._patched_inputs(q, k, v, site, step)
        q_pre, k_pre = q, k
        if self.rope is not None:                                                # RoPE: rotate by position
            rotary, table = step.rotaries[self.rope], step.rotation(self.rope)
            if self.q_norm is None and not patched:                              # Q and K side by side: one op
                q, k = rotary.rotate(qkv[:, : n_q + n_kv], table).split((n_q, n_kv), dim=1)
            else:
                q, k = rotary.rotate(q, table), rotary.rotate(k, table)
        q, k, v = q.transpose(0, 1), k.transpose(0, 1), v.transpose(0, 1)        # (N_Q | N_KV, T, d_head)

        if cache is None:
            keys, values, kv_positions = k, v, step.positions_np
        else:
            keys, values, kv_positions = cache.update(k, v)                      # (N_KV, n_kv, d)
        seen = step.mask(kv_positions, self.window)
        if fused_attention.applies(capture, site, self.softcap, t):                # A not recorded: see fused_attention
            weights, heads = None, fused_attention.fused(q, keys, values, seen, self.scale)
            prompts = fused_attention.as_attended(seen)
        else:                                                                    # a packed pass: in its squares
            weights, heads, seen, prompts = fused_attention.in_squares(self._attend(site), seen, (q, keys, values),
                                                                       site is not None)
        if site is not None and site.plan.senders:
            path_patching.send(site, heads, self.wo, step)                       # delta = (O_s' - O_s) W^O_s
        wo = self.wo
        y = F.linear(heads.transpose(0, 1).reshape(t, -1), wo.weight, wo.bias)    # concat_h O_h W^O: (T, d_model)

        if capture is not None:
            rotated = self.rope is not None
            capture.attention(self.layer, AttentionCapture(
                q=q, k=k, v=v, weights=weights, head_out=heads, mask=seen.mask, kv_positions=seen.keys,
                rule=seen.rule, prompts=prompts, scale=self.scale, softcap=self.softcap,
                kernel=site.kernel if site else SOFTMAX,
                q_pre_rope=q_pre.transpose(0, 1) if rotated else None,
                k_pre_rope=k_pre.transpose(0, 1) if rotated else None))
        return y
