"""An Intervention applied over one decoder's run: at each attention sublayer (Site) the edited mask and kernel,
the ablated and patched head outputs, patterns and inputs; and, over the run (InterventionRun), the prompt's mean
head outputs that later decoding steps reuse, and the residual and sublayer patches.

attention.attend reads a Site at its one place; `step` below is that pass's attention.StepContext.
"""
from __future__ import annotations

import numpy as np
import torch

from explorer.core.errors import ExplorerError
from explorer.core.intervention import Intervention, Kernel, LayerIntervention
from explorer.core.intervention_parts import pattern_rows, rows_of
from explorer.core.visibility import Visibility


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
                counts = None if seen.padding is None else (~seen.padding).flatten(1).sum(1).cpu().numpy()
                values = pattern_rows(patch, seen.queries, seen.keys, seen.sequences, rows, counts)   # (n, n_kv)
                weights[..., patch.head, torch.from_numpy(rows), :] = torch.as_tensor(
                    values, dtype=weights.dtype, device=weights.device)
                if seen.padding is not None:                                     # a padded batch's keys stay 0
                    weights[..., patch.head, :, :].masked_fill_(seen.padding[:, 0], 0.0)
        return weights

    def inputs(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, step):
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

    def patch_residual(self, h: torch.Tensor, layer: int, step) -> torch.Tensor:
        """h (T, d) entering block `layer`, with the intervention's residual patches written."""
        patches = self.intervention.residual_patches_at(layer)
        if not patches:
            return h
        h = h.clone()
        for patch in patches:
            rows = np.flatnonzero(_in_sequence(step.sequences, patch.sequence) & (step.positions_np == patch.position))
            if rows.size:
                if patch.value.shape[-1] != h.shape[-1]:
                    raise ExplorerError(f"a residual patch of layer {patch.layer} has {patch.value.shape[-1]} "
                                        f"numbers; the residual stream has {h.shape[-1]}")
                h[torch.from_numpy(rows)] = torch.as_tensor(patch.value, dtype=h.dtype, device=h.device)
        return h

    def patch_sublayer(self, out: torch.Tensor, layer: int, which: str, step) -> torch.Tensor:
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


