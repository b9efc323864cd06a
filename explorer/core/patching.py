"""Activation patching: which head (or residual position) carries what a clean prompt knows.

Two prompts with the same number of tokens, a clean one ("The Eiffel Tower is in the city of")
and a corrupted one that names another place. For each site, the corrupted run is repeated with
that site's activation taken from the clean run, and a metric read at the last position:

    logit_diff = logit(target) - logit(against),   or   prob = softmax(logits)[target].

Sites: "head" patches O_h = A_h V_h of one head at every position (layers x heads);
"resid" patches the residual stream entering block l at one position (layers x positions).

The patched run of a site in layer l shares the corrupted run up to that layer, so it only runs
blocks l.. (the residual entering block l is kept from the corrupted run): on average half a
forward per site. The sites of a layer are packed side by side into one pass (packed.py), so that
the weights (what a small prompt's pass spends its time reading) are read once for all of them;
several pairs (patch_maps) share their clean and corrupted pass and their layers' site passes.
The patch itself is an intervention.Intervention, read by the attention core.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import torch
import torch.nn.functional as F

from explorer.core.capture import StepCapture
from explorer.core.errors import ExplorerError
from explorer.core.intervention import HeadPatch, Intervention, ResidualPatch, combined
from explorer.core.kernel import softcapped
from explorer.core.packed import packed_captures
from explorer.core.pass_budget import rows_within

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
            raise ExplorerError(f"metric {metric!r} is not one of {', '.join(METRICS)}, nor a function of the logits")
        if metric == "logit_diff" and against_id is None:
            raise ExplorerError("the logit difference needs a token to compare against")
        self.model, self.target, self.against, self.metric = model, target_id, against_id, metric

    def __call__(self, last: torch.Tensor) -> np.ndarray:
        """The metric of each row of `last` (n, d), residual streams before the final norm: (n,)."""
        last = self.model.norm(last)                                             # (n, d)
        if callable(self.metric):
            logits = self.model.logits(last).float().cpu().numpy()               # (n, V)
            return np.array([_number(self.metric(row)) for row in logits])
        if self.metric == "prob":
            logits = self.model.logits(last).float()                             # (n, V)
            return torch.softmax(logits, dim=-1)[:, self.target].cpu().numpy()
        logits = token_logits(self.model, last, [self.target, self.against]).float()     # (n, 2)
        return (logits[:, 0] - logits[:, 1]).cpu().numpy()


def token_logits(model, hidden: torch.Tensor, token_ids: list[int]) -> torch.Tensor:
    """The logits of the tokens `token_ids` only, (n, k) for final-normed states `hidden` (n, d), as model.logits
    gives them (h W_U, soft-capped where the model caps them): k rows of W_U read, not the vocabulary's V."""
    head = model.lm_head
    bias = None if head.bias is None else head.bias[token_ids]
    return softcapped(F.linear(hidden, head.weight[token_ids], bias), getattr(model.config, "final_softcap", None))


def check_base(intervention) -> Intervention | None:
    """The intervention both runs and every patched run go under (None: none). A mean ablation's mean is
    taken over each packed sequence's own rows (intervention_run.Site), as in that run alone."""
    if intervention is None or intervention.is_empty:
        return None
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
    return patch_maps(loaded, [(clean_ids, corrupt_ids, target_id, against_id)], site, metric, progress, cancel,
                      batch, intervention)[0]


def patch_maps(loaded, pairs: list[tuple], site: str = "head", metric="logit_diff", progress=None, cancel=None,
               batch: int = 16, intervention=None, rows: int = 4096, budget: int | None = None) -> list[PatchMap]:
    """patch_map of each (clean_ids, corrupt_ids, target_id, against_id) pair, the pairs sharing passes: the
    clean and corrupted runs of every pair are packed passes, and each layer's sites of every pair run
    `batch` sequences (of at most `rows` rows in all) to a pass; with `budget` (bytes), no pass takes more
    rows than a recorded pass within it (pass_budget.rows_within: an over-estimate, as a site's pass keeps no
    layer's rows). `progress` counts the sites of all pairs."""
    if site not in SITES:
        raise ExplorerError(f"site {site!r} is not one of {', '.join(SITES)}")
    if loaded.info.is_encoder_only or loaded.info.is_encoder_decoder:
        raise ExplorerError(f"patching runs on decoder-only models; {loaded.info.name} is not one")
    prompts = [check_prompts(clean, corrupt) for clean, corrupt, _, _ in pairs]
    model = loaded.model
    scores = [_Scorer(model, int(t), None if a is None else int(a), metric) for _, _, t, a in pairs]
    named = metric if isinstance(metric, str) else getattr(metric, "__name__", "custom")
    with torch.inference_mode():
        base = check_base(intervention)
        runs = packed_captures(loaded, [p for pair in prompts for p in pair], [len(p) - 1 for p, _ in prompts
                                                                                   for _ in (0, 1)], base, budget)
        rows = rows if budget is None else min(rows, rows_within(loaded.config, budget))
        cleans, corrupts = runs[0::2], runs[1::2]
        ends = [[float(score(run.layers[-1].residual[-1:])[0]) for run in pair]
                for score, pair in zip(scores, zip(cleans, corrupts))]
        sites = [_sites(clean, site) for clean in cleans]
        values = [np.full((len(model.layers), len(one[0])), np.nan) for one in sites]
        done, total = 0, sum(v.size for v in values)
        for layer in range(len(model.layers)):
            jobs = [(pair, index) for pair in range(len(pairs)) for index in range(len(sites[pair][layer]))]
            for chunk in _passes(jobs, [len(p) for p, _ in prompts], batch, rows):
                if _cancelled(cancel):
                    return _maps(site, named, ends, values, complete=False)
                patched = _patched(model, [sites[p][layer][i] for p, i in chunk],
                                   [corrupts[p].layers[layer].residual_in for p, _ in chunk], layer, base)
                for pair in sorted({p for p, _ in chunk}):                     # each pair's rows scored at once
                    mine = [n for n, (p, _) in enumerate(chunk) if p == pair]
                    values[pair][layer, [chunk[n][1] for n in mine]] = scores[pair](patched[mine])
                done += len(chunk)
                if progress is not None:
                    progress(done, total)
        return _maps(site, named, ends, values)


def _maps(site: str, metric: str, ends: list, values: list, complete: bool = True) -> list[PatchMap]:
    return [PatchMap(site, metric, end[0], end[1], v, complete) for end, v in zip(ends, values)]


def _passes(jobs: list[tuple[int, int]], lengths: list[int], batch: int, rows: int) -> list[list]:
    """The (pair, site) jobs cut in order into passes of at most `batch` sequences and `rows` rows (one at least)."""
    out: list[list] = []
    for job in jobs:
        if out and len(out[-1]) < batch and sum(lengths[p] for p, _ in out[-1]) + lengths[job[0]] <= rows:
            out[-1].append(job)
        else:
            out.append([job])
    return out


def _patched(model, patches: list, streams: list[torch.Tensor], layer: int,
             base: Intervention | None = None) -> torch.Tensor:
    """The final residual stream's last row of each corrupted run (its residual entering `layer` in `streams`,
    (T_i, d) each) with its patch from `patches` (one per packed sequence), from block `layer` on: (n, d)."""
    lengths = [len(h) for h in streams]
    packed = tuple(replace(patch, sequence=i) for i, patch in enumerate(patches))
    intervention = Intervention(head_patches=packed) if isinstance(patches[0], HeadPatch) else \
        Intervention(residual_patches=packed)
    if base is not None:
        intervention = combined([base, intervention])
    positions = np.concatenate([np.arange(t) for t in lengths])
    step = model.step_context(positions, intervention, np.repeat(np.arange(len(lengths)), lengths))
    out = model.run_blocks(torch.cat(streams), step, start=layer)                # (sum T_i, d): shared up to `layer`
    return out[torch.as_tensor(np.cumsum(lengths) - 1)]                          # each sequence's last row


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


def _number(value) -> float:
    """What a callable metric returned, as a float; anything but a number (or NaN) refused in one sentence."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ExplorerError(f"the metric returned {value!r}, not a number") from None
    if number != number:
        raise ExplorerError("the metric returned NaN, not a number")
    return number
