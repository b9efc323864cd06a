"""Several prompts at once: each prompt's result equals its result alone.

A batch of runs is prefilled in packed passes (core/packed.py: the prompts side by side, each row
attending only within its own prompt, so no padding enters a sum), cut into chunks that fit a memory
budget; an encoder-only model's batch, and an encoder-decoder's encoder passes, are one padded pass
(encoder.prefill_padded, encdec_decode.prefill_padded: right padding hidden by the attention mask), cut into
chunks the same way, under an intervention as well. `progress(done, total)` is called after each prompt. Lists given
beside the prompts (targets, positions) are matched one to one, or a single value is used for every
prompt.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from explorer import api_checks as checks
from explorer.api_run import Run
from explorer.core.errors import ContextOverflowError, ExplorerError
from explorer.core.intervention import NONE


def each(prompts: Sequence, compute: Callable, progress: Callable | None = None) -> list:
    """[compute(p) for p in prompts], reporting progress(done, total) after each."""
    prompts = list(prompts)
    results = []
    for done, prompt in enumerate(prompts, start=1):
        results.append(compute(prompt))
        if progress is not None:
            progress(done, len(prompts))
    return results


def matched(values, n: int, what: str) -> list:
    """`values` as a list of n: a list or tuple of n values, or one value repeated (None stays None)."""
    if isinstance(values, (list, tuple)):
        if len(values) != n:
            raise ExplorerError(f"{what} lists {len(values)} values for {n} prompts: give one per prompt, or one")
        return list(values)
    return [values] * n


def runs(model, prompts: Sequence, options: dict, progress: Callable | None = None, memory: int | None = None) -> list:
    """Model.run over several prompts: one Run each, equal to the prompt's run alone. The prefills are
    packed passes of as many prompts as `memory` bytes allow (None: pass_budget.default_budget), the
    decoding steps each run's own."""
    from explorer.core import packed, pass_budget  # torch, loaded on first use
    from explorer.core.sampling import Sampling

    budget = pass_budget.budget_of(model.loaded, memory)
    whole = checks.intervention_of(options["ablate"], options["kernel"], options["kernel_layers"],
                                   options["kernel_temperature"], options["intervention"], model.info)
    prompts = list(prompts)
    if len(prompts) >= 2 and _can_pad(model, options):
        return _encoder_runs(model, prompts, options, progress, budget, whole)
    if len(prompts) < 2 or not packed.can_record_packed(model.loaded, whole):
        return each(prompts, lambda one: model.run(one, **options), progress)
    ids = [model._ids(prompt, options["prepend_bos"]) for prompt in prompts]
    steps = _steps(options["steps"], max(len(one) for one in ids), model.loaded.config.max_positions)
    record = checks.record_options(options["record"], whole)
    def made_decoder(one: np.ndarray):
        decoder = packed.PackedDecoder(model.loaded, record, options["sampling"] or Sampling(),
                                       capacity=len(one) + steps)
        decoder.set_intervention(whole)
        return decoder

    deferred = not record.layers and steps == 0 and options["activations"] is None
    decoders = [DeferredDecoder(lambda one=one: made_decoder(one), whole) if deferred else made_decoder(one)
                for one in ids]
    made: list = [None] * len(prompts)
    for done, index in enumerate(packed.prefill_packed(model.loaded, decoders, ids, budget), start=1):
        made[index] = _stepped_run(model, decoders[index], prompts[index], whole, steps, options)
        if progress is not None:
            progress(done, len(prompts))
    return made


def _stepped_run(model, decoder, prompt, whole, steps: int, options: dict) -> Run:
    """A batch's run of `prompt` once its prefill is in `decoder`: its `steps` decoding steps taken, and the
    activations asked for recorded."""
    for _ in range(steps):
        decoder.step()
    run = Run(model, decoder, prompt if isinstance(prompt, str) else None, whole)
    if options["activations"] is not None:
        run.activations(options["activations"])
    return run


class DeferredDecoder:
    """A batch run's packed.PackedDecoder, made and given its part of the packed pass only when the run first
    reads more than its last logits or its final states: a run recorded with record="logits" and no steps, read
    for `last_logits` or `logit_diff` (a metric over a batch), then costs its share of the pass and no KV cache,
    trace or candidates (and `logit_diff` not even the pass's product with W_U: packed.LastLogits).
    It stands in for the decoder in packed.prefill_packed (capture_for, intervention, prefill_from, prefill);
    any other attribute is the made decoder's."""

    can_generate = True                               # a decoder-only model's (packed passes are theirs)

    def __init__(self, make: Callable, intervention) -> None:
        self._make, self._decoder, self._given, self._last = make, None, None, None
        self.intervention = intervention or NONE
        self.final_states = None                      # (T, d) final-normed, the prompt's rows of its pass

    @property
    def pending(self) -> bool:
        """Whether the run's decoder is not made yet (its last logits and final states are all it has)."""
        return self._decoder is None

    @property
    def last_logits(self):
        """The logits after the prompt's last row (1, V), from its pass's one product (made when first asked)."""
        if self._last is None:
            return None
        last, index = self._last
        return last.row(index)

    def capture_for(self, n_new: int):
        from explorer.core.recording import FinalStatesCapture  # torch, loaded on first use

        return FinalStatesCapture()                   # what a decoder that records no layers asks its pass for

    def prefill_from(self, ids: np.ndarray, given) -> None:
        self._given, self._last, self.final_states = (ids, given), (given.last, given.index), given.hidden

    def prefill(self, ids: np.ndarray):
        return self.decoder.prefill(ids)

    @property
    def decoder(self):
        """The made decoder, prefilled from the pass's part it was given."""
        if self._decoder is None:
            self._decoder = self._make()
            if self._given is not None:
                self._decoder.prefill_from(*self._given)
                self._given = None
        return self._decoder

    def __getattr__(self, name: str):                 # only what this class does not define
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.decoder, name)


def _can_pad(model, options: dict) -> bool:
    """Whether a batch's encoder passes may be one padded pass: an encoder-only model (no steps: a run of
    steps > 0 is refused by the prompt's own run, in its words) or an encoder-decoder, under any intervention
    (a mean is taken over each prompt's own rows, a pattern patch leaves the padding's keys at 0:
    attention.Site)."""
    steps = options["steps"]
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)):
        return False
    return (model.info.is_encoder_only and steps == 0) or model.info.is_encoder_decoder


def _encoder_runs(model, prompts: list, options: dict, progress: Callable | None, budget: int, whole) -> list:
    """An encoder's (or encoder-decoder's) runs from padded encoder passes over as many prompts as `budget`
    bytes allow (encoder.padded_bytes; a prompt that does not fit alone runs alone), each run then taking
    its own decoding steps."""
    from explorer.core import encdec_decode, encoder, pass_budget  # torch, loaded on first use

    ids = [model._ids(prompt, options["prepend_bos"]) for prompt in prompts]
    steps = _steps(options["steps"], max(len(one) for one in ids), model.loaded.config.max_positions)
    decoders = [checks.decoder(model.loaded, options["sampling"], len(one) + steps, whole) for one in ids]
    prefill = encoder.prefill_padded if model.info.is_encoder_only else encdec_decode.prefill_padded
    made: list = [None] * len(prompts)
    done = 0
    for chunk in pass_budget.chunks(len(ids), lambda rows: encoder.padded_bytes(
            model.loaded.config, [len(ids[i]) for i in rows]) <= budget):
        prefill([decoders[i] for i in chunk], [ids[i] for i in chunk])
        for index in chunk:
            made[index] = _stepped_run(model, decoders[index], prompts[index], whole, steps, options)
            done += 1
            if progress is not None:
                progress(done, len(prompts))
    return made


def _steps(steps, longest: int, context: int) -> int:
    """`steps` checked as Model.run checks it, for the longest prompt of a batch."""
    steps = checks.whole(steps, "steps")
    if longest + steps > context:
        raise ContextOverflowError(
            f"the prompt has {longest} tokens; with {int(steps)} steps it exceeds the model's context of {context}")
    return int(steps)
