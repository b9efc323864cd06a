"""Activation patching: which head (or residual position) carries what a clean prompt knows.

Two prompts with the same number of tokens, a clean one ("The Eiffel Tower is in the city of")
and a corrupted one that names another place. For each site, the corrupted run is repeated with
that site's activation taken from the clean run, and a metric read at the last position:

    logit_diff = logit(target) - logit(against),   or   prob = softmax(logits)[target].

Sites: "head" patches O_h = A_h V_h of one head at every position (layers x heads);
"resid" patches the residual stream entering block l at one position (layers x positions).

The patched run of a site in layer l shares the corrupted run up to that layer, so it only runs
blocks l.. (the residual entering block l is kept from the corrupted run): on average half a
forward per site. The sites of a layer are packed side by side into one pass, so that the
weights (what a small prompt's pass spends its time reading) are read once for all of them.
The patch itself is an intervention.Intervention, read by the attention core.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import torch

from explorer.core.capture import StepCapture
from explorer.core.errors import ExplorerError
from explorer.core.intervention import HeadPatch, Intervention, ResidualPatch, combined

SITES = ("head", "resid")
METRICS = ("logit_diff", "prob")


@dataclass(frozen=True)
class PatchMap:
    """The metric of the clean and corrupted runs, and of each patched run: (L, H) or (L, T)."""

    site: str
    metric: str
    clean: float
    corrupt: float
    values: np.ndarray              # NaN where a cancelled map did not get to
    complete: bool = True

    def to_json(self) -> dict:
        key = "logit_diff" if self.metric == "logit_diff" else "prob"
        return {"site": self.site, "metric": self.metric, "clean": self.clean, "corrupt": self.corrupt,
                key: [[None if np.isnan(v) else float(v) for v in row] for row in self.values],
                "complete": self.complete}


class Cancelled(ExplorerError):
    """The map was cancelled before it was complete."""


def single_token(tokenizer, text: str, what: str) -> int:
    """The id of `text` when it is exactly one token, else ExplorerError."""
    tokens = tokenizer.encode(text)
    ids = [int(i) for i, special in zip(tokens.ids, tokens.special) if not special]
    if len(ids) != 1:
        raise ExplorerError(f"{what} {text!r} is {len(ids)} tokens, not one (try it with or without a leading space)")
    return ids[0]


def check_prompts(clean_ids, corrupt_ids) -> tuple[np.ndarray, np.ndarray]:
    clean, corrupt = (np.asarray(ids, dtype=np.int64).reshape(-1) for ids in (clean_ids, corrupt_ids))
    if len(clean) != len(corrupt):
        raise ExplorerError(f"the clean prompt has {len(clean)} tokens and the corrupted one {len(corrupt)}: "
                            "patching needs the same number")
    if len(clean) == 0:
        raise ExplorerError("the prompts are empty: give at least one token")
    return clean, corrupt


class _Scorer:
    """The metric from the final residual stream's last rows: only the rows of W_U it needs; a callable
    metric is given each row's logits (V,) as float32 numpy and returns a number."""

    def __init__(self, model, target_id: int, against_id: int | None, metric):
        if callable(metric):
            self.model, self.metric = model, metric
            return
        if metric not in METRICS:
            raise ExplorerError(f"metric {metric!r} is not one of {', '.join(METRICS)}")
        if metric == "logit_diff" and against_id is None:
            raise ExplorerError("the logit difference needs a token to compare against")
        self.model, self.target, self.against, self.metric = model, target_id, against_id, metric
        self.capped = bool(getattr(model.config, "final_softcap", None))

    def __call__(self, last: torch.Tensor) -> np.ndarray:
        """The metric of each row of `last` (n, d), residual streams before the final norm: (n,)."""
        last = self.model.norm(last)                                             # (n, d)
        if callable(self.metric):
            logits = self.model.logits(last).float().cpu().numpy()               # (n, V)
            return np.array([float(self.metric(row)) for row in logits])
        if self.metric == "prob" or self.capped:
            logits = self.model.logits(last).float()                             # (n, V)
            if self.metric == "prob":
                return torch.softmax(logits, dim=-1)[:, self.target].cpu().numpy()
            return (logits[:, self.target] - logits[:, self.against]).cpu().numpy()
        rows = self.model.lm_head.weight[[self.target, self.against]]            # (2, d) rows of W_U
        logits = (last @ rows.T).float()                                         # (n, 2)
        return (logits[:, 0] - logits[:, 1]).cpu().numpy()


def _run(model, ids: torch.Tensor, positions: np.ndarray, intervention=None) -> StepCapture:
    capture = StepCapture(len(model.layers))
    model(ids, positions, None, capture, intervention)
    return capture


def check_base(intervention) -> Intervention | None:
    """The intervention both runs and every patched run go under (None: none); a mean ablation is refused,
    since the packed passes would take its mean over several sequences."""
    if intervention is None or intervention.is_empty:
        return None
    if any(a.mode == "mean" for a in intervention.ablations) or \
            (intervention.keep_only is not None and intervention.keep_only.mode == "mean"):
        raise ExplorerError("patching under a mean ablation is not supported: use a zero ablation or patch_head "
                            "with the mean values")
    return intervention


def patch_map(loaded, clean_ids, corrupt_ids, target_id: int, against_id: int | None = None, site: str = "head",
              metric="logit_diff", progress=None, cancel=None, batch: int = 16, intervention=None) -> PatchMap:
    """The map of the metric over every site, each patched from the clean run into the corrupted one.

    The sites of one layer run together, `batch` at a time, packed into one pass (their rows
    side by side, each attending within its own sequence), so each weight is read once per pass.
    `progress(done, total)` is called after each pass; `cancel` (a callable or a threading.Event)
    stops the map between passes: the result then has complete=False and NaN where it did not get to.
    `metric` is "logit_diff", "prob" or a callable on one row's logits (V,); `intervention` applies
    to the clean, corrupted and patched runs alike.
    """
    if site not in SITES:
        raise ExplorerError(f"site {site!r} is not one of {', '.join(SITES)}")
    if loaded.info.is_encoder_only or loaded.info.is_encoder_decoder:
        raise ExplorerError(f"patching runs on decoder-only models; {loaded.info.name} is not one")
    clean, corrupt = check_prompts(clean_ids, corrupt_ids)
    model = loaded.model
    score = _Scorer(model, int(target_id), None if against_id is None else int(against_id), metric)
    named = metric if isinstance(metric, str) else getattr(metric, "__name__", "custom")
    positions = np.arange(len(clean), dtype=np.int64)
    with torch.inference_mode():
        base = check_base(intervention)
        clean_run = _run(model, torch.as_tensor(clean), positions, base)
        corrupt_run = _run(model, torch.as_tensor(corrupt), positions, base)
        ends = [float(score(run.layers[-1].residual[-1:])[0]) for run in (clean_run, corrupt_run)]
        sites = _sites(clean_run, site)
        values = np.full((len(model.layers), len(sites[0])), np.nan)
        done = 0
        for layer, row in enumerate(sites):
            for first in range(0, len(row), batch):
                if _cancelled(cancel):
                    return PatchMap(site, named, ends[0], ends[1], values, complete=False)
                chunk = row[first: first + batch]
                values[layer, first: first + len(chunk)] = _patched(model, score, corrupt_run, layer, chunk, positions,
                                                                    base)
                done += len(chunk)
                if progress is not None:
                    progress(done, values.size)
        return PatchMap(site, named, ends[0], ends[1], values)


def _patched(model, score, corrupt_run: StepCapture, layer: int, patches: list, positions: np.ndarray,
             base: Intervention | None = None) -> np.ndarray:
    """The metric of the corrupted run with each of `patches` (one per packed sequence), from block `layer` on."""
    n, t = len(patches), len(positions)
    packed = tuple(replace(patch, sequence=i) for i, patch in enumerate(patches))
    intervention = Intervention(head_patches=packed) if isinstance(patches[0], HeadPatch) else \
        Intervention(residual_patches=packed)
    if base is not None:
        intervention = combined([base, intervention])
    step = model.step_context(np.tile(positions, n), intervention, np.repeat(np.arange(n), t))
    h = corrupt_run.layers[layer].residual_in.repeat(n, 1)                       # (n T, d): shared up to `layer`
    out = model.run_blocks(h, step, start=layer)                                 # (n T, d)
    return score(out[t - 1:: t])                                                 # each sequence's last row


def _sites(clean_run: StepCapture, site: str) -> list[list]:
    """Per layer, the patch of each site: one head's clean O_h, or one position's clean residual."""
    rows = []
    for layer, captured in enumerate(clean_run.layers):
        if site == "head":
            heads = captured.attn.head_out.float().cpu().numpy()                 # (N_Q, T, d_v)
            rows.append([HeadPatch(layer, h, heads[h]) for h in range(len(heads))])
        else:
            resid = captured.residual_in.float().cpu().numpy()                   # (T, d)
            rows.append([ResidualPatch(layer, p, resid[p]) for p in range(len(resid))])
    return rows


def _cancelled(cancel) -> bool:
    if cancel is None:
        return False
    return bool(cancel()) if callable(cancel) else bool(cancel.is_set())
