"""The research calls of a Model over one prompt or a batch: attribution (of a logit or of a difference),
patching and head scores, each accepting an explorer.Intervention.

    model.attribute(prompt, target=" Mary", against=" John")          # LogitDifference: parts and lens
    model.attribute(prompts, target=[" Mary", ...], against=[...])    # one per prompt
    model.patch(cleans, corrupts, target=..., against=...)            # PatchMaps: per pair and their mean
    model.heads([ids_a, ids_b])                                       # the mean of their head scores
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from explorer import api_batches as batches
from explorer import api_checks as checks
from explorer.core.errors import ExplorerError


def attribute(model, prompt, position, token_id, target, against, intervention):
    """Model.attribute: see its docstring."""
    if checks.is_batch(prompt):
        n = len(prompt)
        rows = list(zip(prompt, batches.matched(position, n, "position"), batches.matched(token_id, n, "token_id"),
                        batches.matched(target, n, "target"), batches.matched(against, n, "against")))
        if target is not None and against is not None and token_id is None:
            return _differences(model, rows, intervention)
        return [attribute(model, *row, intervention) for row in rows]
    from explorer.core.attribution import attribute as attribute_logit  # torch, loaded on first use
    from explorer.core.logit_difference import logit_difference

    ids = model._ids(prompt)
    position = checks.index(position, "position", ids.size, allow_none=True)
    whole = checks.intervention_of((), None, None, 1.0, intervention, model.info)
    if target is None:
        if against is not None:
            raise ExplorerError("against= needs a target= to compare with")
        token = None if token_id is None else model._token(token_id, "token id")
        return attribute_logit(model.loaded, ids, position, token, whole)
    if token_id is not None:
        raise ExplorerError("give either token_id= or target=, not both")
    if against is None:
        return attribute_logit(model.loaded, ids, position, model._token(target, "target"), whole)
    return logit_difference(model.loaded, ids, model._token(target, "target"), model._token(against, "against"),
                            position, whole)


def _differences(model, rows, intervention):
    """The LogitDifference of each (prompt, position, _, target, against) row, from one packed pass."""
    from explorer.core.logit_difference import logit_differences  # torch, loaded on first use

    ids = [model._ids(row[0]) for row in rows]
    positions = [checks.index(row[1], "position", len(one), allow_none=True) for row, one in zip(rows, ids)]
    whole = checks.intervention_of((), None, None, 1.0, intervention, model.info)
    return logit_differences(model.loaded, ids, [model._token(row[3], "target") for row in rows],
                             [model._token(row[4], "against") for row in rows], positions, whole)


@dataclass(frozen=True)
class PatchMaps:
    """One patching map per (clean, corrupted) pair, and their mean (patching.PatchMap each)."""

    maps: list
    mean: object

    def to_json(self) -> dict:
        return {"maps": [m.to_json() for m in self.maps], "mean": self.mean.to_json()}


def patch(model, clean, corrupt, target, against, site, metric, progress, cancel, intervention=None, memory=None):
    """Model.patch: one map, or for lists of prompts a PatchMaps (the pairs sharing their passes)."""
    from explorer.core import pass_budget, patching  # torch, loaded on first use

    checks.callback(progress, "progress")
    checks.callback(cancel, "cancel")
    for prompts in (clean, corrupt):
        checks.refuse_mixed(prompts)
    batch = checks.is_batch(clean) or checks.is_batch(corrupt)
    if batch and (not (checks.is_batch(clean) and checks.is_batch(corrupt)) or len(clean) != len(corrupt)):
        raise ExplorerError("patching a batch needs two lists of prompts of the same length (clean, corrupted)")
    cleans, corrupts = (list(clean), list(corrupt)) if batch else ([clean], [corrupt])
    n = len(cleans)
    pairs = [(*patching.check_prompts(model._ids(a), model._ids(b)), model._token(t, "target"),
              None if o is None else model._token(o, "against"))
             for a, b, t, o in zip(cleans, corrupts, batches.matched(target, n, "target"),
                                   batches.matched(against, n, "against"))]
    if batch and site == "resid" and len({len(pair[0]) for pair in pairs}) > 1:
        raise ExplorerError(f"the mean of residual maps needs pairs of one length; these have "
                            f"{', '.join(str(len(pair[0])) for pair in pairs)} tokens: patch them one length at a time")
    whole = checks.intervention_of((), None, None, 1.0, intervention, model.info)
    maps = patching.patch_maps(model.loaded, pairs, site, metric, progress=progress, cancel=cancel, intervention=whole,
                               budget=None if memory is None else pass_budget.budget_of(model.loaded, memory))
    if not batch:
        return maps[0]
    mean = replace(maps[0], clean=float(np.mean([m.clean for m in maps])),
                   corrupt=float(np.mean([m.corrupt for m in maps])),
                   values=np.mean([m.values for m in maps], axis=0), complete=all(m.complete for m in maps))
    return PatchMaps(maps, mean)


def heads(model, ids, repeat: int, seed: int, intervention=None, memory=None):
    """Model.heads: the scores on one sequence, or the mean of the scores over several."""
    from explorer.core import pass_budget  # torch, loaded on first use
    from explorer.core.head_scores import score_heads, score_heads_each

    budget = pass_budget.budget_of(model.loaded, memory)
    whole = checks.intervention_of((), None, None, 1.0, intervention, model.info)
    if ids is not None and checks.is_batch(ids):
        _check_repeat(repeat)
        each = score_heads_each(model.loaded, [checks.one_prompt_ids(one, "ids") for one in ids], int(repeat),
                                intervention=whole, budget=budget)
        return replace(each[0], ids=each[0].ids, trace=None,
                       previous_token=np.mean([s.previous_token for s in each], axis=0),
                       induction=np.mean([s.induction for s in each], axis=0),
                       sink=np.mean([s.sink for s in each], axis=0))
    _check_repeat(repeat)
    sequence = None if ids is None else checks.one_prompt_ids(ids, "ids")
    return score_heads(model.loaded, sequence, int(repeat), seed=checks.seed_of(seed), intervention=whole)


def _check_repeat(repeat) -> None:
    checks.whole(repeat, "repeat", least=1)
