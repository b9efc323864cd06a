"""Causal self-attention with N_KV <= N_Q key/value heads (MHA, GQA, MQA), written like the math.

    Q_h = X W_h^Q,  K_g = X W_g^K,  V_g = X W_g^V      (g = the K/V head query head h reads)
    S_h = Q_h K_g^T * scale  (+ mask: causal, or causal within a sliding window of W)
    A_h = softmax(S_h),  O_h = A_h V_g,  Y = concat_h(O_h) W^O

Vaswani et al. 2017 (MHA); Shazeer 2019 (MQA); Ainslie et al. 2023 (GQA).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from explorer.core import fused_attention, path_patching
from explorer.core import kernel as kernels
from explorer.core.attention_maps import MaskRule
from explorer.core.capture import AttentionCapture
from explorer.core.errors import ExplorerError
from explorer.core.intervention import SOFTMAX, Intervention, Kernel, LayerIntervention
from explorer.core.intervention_parts import rows_of
from explorer.core.rope import Rotary, RotationTable
from explorer.core.stacked import stack_rows, store_by_columns


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

    def mask(self, kv_positions: np.ndarray, window: int | None) -> "Visibility":
        """Which of the keys at `kv_positions` each query sees: causal, within `window` if given.

        Memoized, so that layers of one kind record the same mask and kv_positions arrays.
        """
        key = (int(kv_positions[0]), len(kv_positions), window)
        if key not in self._masks:
            rule = MaskRule.of(np.array(self.positions_np), kv_positions, window)  # causal, within W
            if self.sequences is None:
                self._masks[key] = Visibility.by(rule, self.positions.device)
            else:                                                                # packed: no cache, keys = rows
                visible = np.asarray(rule) & (self.sequences[:, None] == self.sequences[None, :])
                self._masks[key] = Visibility.of(visible, self.positions_np, kv_positions, self.positions.device,
                                                 self.sequences)                 # no longer the positions' rule
        return self._masks[key]

    def site(self, layer: int, n_heads: int, where: str = "self") -> "Site | None":
        return None if self.run is None else self.run.site(layer, n_heads, where)


@dataclass(frozen=True)
class Visibility:
    """mask (T, n_kv) bool, True where query i may attend key j; `hidden` the torch tensor of the
    hidden entries (None when nothing is hidden; it may carry a batch's padding as well);
    the absolute positions of the queries (T,) and of the keys (n_kv,), for packed
    sequences which one each query row belongs to, and the MaskRule `mask` was made by
    (None where it is not one: edited, packed; `without` drops it); `padding` a padded batch's
    (B, 1, 1, n_kv), True at its padded keys (self-attention: its padded rows too)."""

    mask: np.ndarray
    hidden: torch.Tensor | None
    queries: np.ndarray
    keys: np.ndarray
    sequences: np.ndarray | None = None
    rule: MaskRule | None = None
    padding: torch.Tensor | None = None

    @staticmethod
    def of(visible: np.ndarray, queries: np.ndarray, keys: np.ndarray, device, sequences=None,
           rule: MaskRule | None = None) -> "Visibility":
        hidden = None if visible.all() else torch.from_numpy(~visible).to(device)
        return Visibility(visible, hidden, queries, keys, sequences, rule)

    @staticmethod
    def by(rule: MaskRule, device, padding: torch.Tensor | None = None) -> "Visibility":
        """The visibility `rule` gives over its queries and keys, carrying the rule to the record; `padding`
        (True at a batch's padded keys, broadcast over the scores) is hidden as well, outside the rule."""
        seen = Visibility.of(np.asarray(rule), rule.queries, rule.keys, device, rule=rule)  # mask: (T, n_kv)
        if padding is None:
            return seen
        return replace(seen, hidden=padding if seen.hidden is None else seen.hidden | padding, padding=padding)

    def without(self, hidden: np.ndarray | None) -> "Visibility":
        """This visibility with the entries of `hidden` (T, n_kv) hidden as well."""
        if hidden is None or not hidden.any():
            return self
        extra = torch.from_numpy(hidden).to(self.hidden.device if self.hidden is not None else "cpu")
        return Visibility(self.mask & ~hidden, extra if self.hidden is None else self.hidden | extra,
                          self.queries, self.keys, self.sequences, padding=self.padding)


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


class Site:
    """One sublayer's LayerIntervention, with the run's store of the prompt's mean O_h per head."""

    def __init__(self, plan: LayerIntervention, means: dict, layer: int = -1):
        self.plan, self.means, self.layer = plan, means, layer

    @property
    def kernel(self) -> Kernel:
        return self.plan.kernel

    def head_outputs(self, heads: torch.Tensor, seen: Visibility) -> torch.Tensor:
        """O (..., N_Q, T, d_v) with ablated heads set to 0 or to their prompt mean (at their positions,
        or every row), and patches written.

        The mean of a head is taken over the rows of the first pass that ablates it (the prompt)
        and kept for the later decoding steps.
        """
        for head, mode, positions in self.plan.ablated:
            rows = slice(None) if positions is None else torch.from_numpy(
                np.flatnonzero(np.isin(seen.queries, positions))).to(heads.device)
            if mode == "mean" and seen.sequences is not None:                   # packed: each prompt's own mean
                self._sequence_means(heads, head, rows, seen.sequences)
            elif mode == "mean":
                if head not in self.means:
                    self.means[head] = _mean_rows(heads[..., head, :, :], seen.padding)  # (..., 1, d_v)
                heads[..., head, rows, :] = self.means[head]
            else:
                heads[..., head, rows, :] = 0.0
        for patch in self.plan.patches:
            _write_rows(heads[..., patch.head, :, :], patch, seen.queries, seen.sequences)
        return heads

    def _sequence_means(self, heads: torch.Tensor, head: int, rows, sequences: np.ndarray) -> None:
        """O_head at `rows` of a packed pass set to the mean over its own sequence's rows, kept as
        means[head, s] (InterventionRun.means_of hands sequence s its means for its later steps)."""
        chosen = np.zeros(len(sequences), dtype=bool)
        chosen[rows if isinstance(rows, slice) else rows.cpu().numpy()] = True
        for s in np.unique(sequences):
            mine = sequences == s
            if (head, int(s)) not in self.means:
                own = torch.from_numpy(np.flatnonzero(mine)).to(heads.device)
                self.means[head, int(s)] = heads[..., head, own, :].mean(dim=-2, keepdim=True)  # (..., 1, d_v)
            written = torch.from_numpy(np.flatnonzero(mine & chosen)).to(heads.device)
            heads[..., head, written, :] = self.means[head, int(s)]

    def patterns(self, weights: torch.Tensor, seen: Visibility) -> torch.Tensor:
        """A (..., N_Q, T, n_kv) with the pattern patches' rows written (columns: the keys' positions; in a
        packed pass a row's own prompt's keys, the others' staying 0)."""
        for patch in self.plan.patterns:
            rows = rows_of(seen.queries, seen.sequences, patch)
            if rows.size:
                own = np.ones((len(rows), len(seen.keys)), dtype=bool) if seen.sequences is None else \
                    seen.sequences[rows][:, None] == seen.sequences[None, :]           # (n, n_kv)
                if seen.padding is not None:                 # a padded batch: a shorter prompt's keys suffice
                    own &= seen.keys[None, :] < patch.values.shape[1]
                row, key = np.nonzero(own)
                values = np.zeros(own.shape, dtype=np.float32)
                values[row, key] = patch.values[seen.queries[rows][row] - patch.start, seen.keys[key]]
                weights[..., patch.head, torch.from_numpy(rows), :] = torch.as_tensor(
                    values, dtype=weights.dtype, device=weights.device)
                if seen.padding is not None:                                     # a padded batch's keys stay 0
                    weights[..., patch.head, :, :].masked_fill_(seen.padding[:, 0], 0.0)
        return weights

    def inputs(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, step: StepContext):
        """Q, K, V as projected (after any q/k norm, before RoPE), (T, heads, d) each, with the input
        patches' rows written on copies."""
        parts = {"q": q.clone(), "k": k.clone(), "v": v.clone()}
        for patch in self.plan.inputs:
            heads = parts[patch.which].shape[1]
            if not 0 <= patch.head < heads:
                raise ExplorerError(f"head {patch.head} of {patch.which} in layer {patch.layer} does not exist: "
                                    f"the layer has {heads} of them")
            _write_rows(parts[patch.which][:, patch.head], patch, step.positions_np, step.sequences)
        return parts["q"], parts["k"], parts["v"]


def _mean_rows(rows: torch.Tensor, padding: torch.Tensor | None) -> torch.Tensor:
    """The mean of rows (..., T, d) over T, (..., 1, d); in a padded batch (`padding` (B, 1, 1, T), True
    at a padded row) over each prompt's real rows."""
    if padding is None:
        return rows.mean(dim=-2, keepdim=True)
    real = (~padding).flatten(-3)[..., None].to(rows.dtype)                       # (B, T, 1)
    return (rows * real).sum(-2, keepdim=True) / real.sum(-2, keepdim=True)


def _write_rows(target: torch.Tensor, patch, queries: np.ndarray, sequences: np.ndarray | None) -> None:
    """target (..., T, n) with the rows of `patch` (intervention_parts.rows_of) set to its values."""
    rows = rows_of(queries, sequences, patch)
    if rows.size:
        values = torch.as_tensor(patch.values[queries[rows] - patch.start], dtype=target.dtype)
        if values.shape[-1] != target.shape[-1]:
            raise ExplorerError(f"a patch of layer {patch.layer} has rows of {values.shape[-1]} numbers; "
                                f"that site has {target.shape[-1]}")
        target[..., torch.from_numpy(rows), :] = values.to(target.device)


class InterventionRun:
    """An Intervention over one decoder's run: its sites, and the prompt's mean head outputs,
    which the later steps of the run reuse (so a cached decode equals the uncached forward)."""

    def __init__(self, intervention: Intervention):
        self.intervention = intervention
        self._means: dict[tuple, dict] = {}
        self.path_deltas: dict[int, tuple] = {}          # path patching (path_patching.py): per patch, its rows' delta
        self.path_inputs: dict[int, torch.Tensor] = {}   # and the receiver's X' of this pass

    def site(self, layer: int, n_heads: int, where: str = "self") -> Site | None:
        plan = self.intervention.at(layer, n_heads, where)
        return None if plan is None else Site(plan, self._means.setdefault((layer, where), {}), layer)

    def means_of(self, sequence: int) -> dict[tuple, dict]:
        """The prompt means a packed pass took over its sequence `sequence`, keyed as a run of that prompt
        alone keeps them (so that its decoding steps reuse them)."""
        return {site: {key[0]: mean for key, mean in means.items() if isinstance(key, tuple) and key[1] == sequence}
                for site, means in self._means.items()}

    def take_means(self, means: dict[tuple, dict]) -> None:
        """Keep `means` (means_of of a packed pass) as this run's own prompt means."""
        for site, heads in means.items():
            self._means.setdefault(site, {}).update(heads)

    def patch_residual(self, h: torch.Tensor, layer: int, step: StepContext) -> torch.Tensor:
        """h (T, d) entering block `layer`, with the intervention's residual patches written."""
        patches = self.intervention.residual_patches_at(layer)
        if not patches:
            return h
        h = h.clone()
        for patch in patches:
            rows = np.flatnonzero(_in_sequence(step.sequences, patch.sequence) & (step.positions_np == patch.position))
            if rows.size:
                h[torch.from_numpy(rows)] = torch.as_tensor(patch.value, dtype=h.dtype, device=h.device)
        return h

    def patch_sublayer(self, out: torch.Tensor, layer: int, which: str, step: StepContext) -> torch.Tensor:
        """What sublayer `which` of block `layer` adds to the residual (T, d), with its patches written."""
        patches = self.intervention.sublayer_patches_at(layer, which)
        if not patches:
            return out
        out = out.clone()
        for patch in patches:
            _write_rows(out, patch, step.positions_np, step.sequences)
        return out


def _in_sequence(sequences: np.ndarray | None, sequence: int | None) -> np.ndarray | bool:
    """Rows of packed `sequences` that belong to `sequence` (every row when either is None)."""
    return True if sequences is None or sequence is None else sequences == sequence


def as_run(intervention) -> InterventionRun | None:
    """An InterventionRun for `intervention` (an Intervention, a run, or None); None when it changes nothing."""
    if intervention is None or isinstance(intervention, InterventionRun):
        return intervention
    return None if intervention.is_empty else InterventionRun(intervention)


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
        else:
            scores = grouped_scores(q, keys).mul_(self.scale)                    # S: (N_Q, T, n_kv)
            weights, heads, seen = attend(scores, seen, lambda a: grouped_mix(a, values),  # A: (N_Q, T, n_kv)
                                          self.softcap, site)                     # O_h = A_h V
        if site is not None and site.plan.senders:
            path_patching.send(site, heads, self.wo, step)                       # delta = (O_s' - O_s) W^O_s
        wo = self.wo
        y = F.linear(heads.transpose(0, 1).reshape(t, -1), wo.weight, wo.bias)    # concat_h O_h W^O: (T, d_model)

        if capture is not None:
            rotated = self.rope is not None
            capture.attention(self.layer, AttentionCapture(
                q=q, k=k, v=v, weights=weights, head_out=heads, mask=seen.mask, kv_positions=seen.keys,
                rule=seen.rule, scale=self.scale, softcap=self.softcap, kernel=site.kernel if site else SOFTMAX,
                q_pre_rope=q_pre.transpose(0, 1) if rotated else None,
                k_pre_rope=k_pre.transpose(0, 1) if rotated else None))
        return y
