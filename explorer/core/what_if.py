"""The what-if comparison: a converted copy of the model (explorer.core.convert) decoded beside the original.

Both models are given the same tokens (teacher forcing: the original's choice, or a session's), and at each
step the next-token distributions are compared by KL(P_original || P_converted), by whether the top tokens
agree, and by the KV-cache bytes each holds. The KV lab's what-if tab and bench/bench_convert.py read it.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from explorer.core.convert import Progress, convert, tick
from explorer.core.decode import Decoder
from explorer.core.errors import ExplorerError
from explorer.core.runtime import LoadedModel


@dataclass(frozen=True)
class StepComparison:
    """One next-token prediction of the original and the converted model, in the same context."""

    step: int                 # 0 = the prefill's prediction
    position: int             # the position whose next token both predict
    token_id: int             # the original's choice, which both models then feed
    original_bytes: int       # KV-cache bytes in use after this step
    converted_bytes: int
    kl: float                 # KL(P_original || P_converted) in nats
    top1_agrees: bool

    @property
    def bytes_saved(self) -> int:
        return self.original_bytes - self.converted_bytes


def kl_divergence(logits_p: np.ndarray, logits_q: np.ndarray) -> float:
    """KL(P || Q) = sum_v P(v) (log P(v) - log Q(v)) of two softmax distributions, in float64."""
    log_p = _log_softmax(np.asarray(logits_p, dtype=np.float64))
    log_q = _log_softmax(np.asarray(logits_q, dtype=np.float64))
    return max(0.0, float(np.sum(np.exp(log_p) * (log_p - log_q))))


def _log_softmax(x: np.ndarray) -> np.ndarray:
    shifted = x - x.max()
    return shifted - np.log(np.exp(shifted).sum())


def compare(original, converted, steps: int, prompt_ids=None, progress: Progress | None = None,
            cancel=None, followed=()) -> list[StepComparison]:
    """Decode with the original and feed the same tokens to the converted model (teacher forcing),
    comparing `steps` next-token distributions: the prefill's, then one per decoding step.

    `original` and `converted` are `explorer.core.decode.Decoder`s; with `prompt_ids` both are
    prefilled here, otherwise both must already hold the same tokens. `followed` (a session's
    `[step.chosen_id for step in trace.steps]`) are the tokens to take: row i's token is followed[i],
    taken as the sampler's choice (Decoder.force(id, forced=False)), so the rows follow a session that
    was branched or sampled; past its end the original decodes greedily.
    """
    if prompt_ids is not None:
        original.prefill(prompt_ids)
        converted.prefill(prompt_ids)
    if not original.trace.steps or not np.array_equal(original.trace.token_ids, converted.trace.token_ids):
        raise ExplorerError("The original and the converted decoder must be prefilled with the same prompt.")
    followed = [int(i) for i in followed]
    _follow(original, followed, 0)
    rows = [_compare_last(original, converted, 0)]
    for index in range(1, steps):
        tick(progress, cancel, index, steps, "decoding both models")
        converted.force(original.trace.steps[-1].chosen_id)
        original.step()
        converted.step()
        _follow(original, followed, index)
        rows.append(_compare_last(original, converted, index))
    tick(progress, None, steps, steps, "done")
    return rows


def _follow(original, followed: list[int], index: int) -> None:
    """Row `index` takes the followed token where there is one, as the sampler's choice, not the person's."""
    if index < len(followed) and original.trace.steps[-1].chosen_id != followed[index]:
        original.force(followed[index], forced=False)


def _compare_last(original, converted, index: int) -> StepComparison:
    position = original.trace.n_tokens - 1
    p, q = original.logits_at(position), converted.logits_at(position)
    return StepComparison(
        step=index, position=position, token_id=int(original.trace.steps[-1].chosen_id),
        original_bytes=int(original.trace.kv_bytes_in_use().sum()),
        converted_bytes=int(converted.trace.kv_bytes_in_use().sum()),
        kl=kl_divergence(p, q), top1_agrees=bool(np.argmax(p) == np.argmax(q)))


@dataclass(frozen=True)
class WhatIf:
    """A finished what-if run, numpy only, for the app: both traces and the per-step comparison."""

    variant: str
    comparisons: tuple[StepComparison, ...]
    original: object          # explorer.core.trace.Trace of the original model
    converted: object         # its converted copy's Trace, same tokens
    relative_error: tuple[float, ...]
    rope_dim: int | None = None
    followed: int = 0         # the first rows that took the session's tokens; the rest are the original's greedy


def what_if(loaded: LoadedModel, variant: str, prompt_ids, steps: int, rope_pairs: int | None = None,
            progress: Progress | None = None, cancel=None, followed=()) -> WhatIf:
    """Convert `loaded` to `variant`, then decode `prompt_ids` with both for `steps` predictions.

    `followed`: the session's chosen ids (`[step.chosen_id for step in trace.steps]`), which the first
    rows take (see compare); without them the original decodes greedily from the prompt.
    """
    def part(start: float, width: float) -> Progress | None:
        return None if progress is None else (lambda f, what: progress(start + width * f, what))

    converted = convert(loaded, variant, rope_pairs, part(0.0, 0.3), cancel)
    original_decoder, converted_decoder = Decoder(loaded), Decoder(converted.loaded)
    for decoder in (original_decoder, converted_decoder):   # a Cancel stops the prompt's passes between layers
        decoder.progress = lambda done, total: tick(None, cancel, done, total, "")
    followed = tuple(int(i) for i in followed)
    rows = compare(original_decoder, converted_decoder, steps, prompt_ids, part(0.3, 0.7), cancel, followed)
    return WhatIf(converted.variant, tuple(rows), original_decoder.trace, converted_decoder.trace,
                  converted.relative_error, converted.rope_dim, min(len(followed), steps))
