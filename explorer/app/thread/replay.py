"""Rebuilding a trace exactly on the model thread: after a Cancel (the window's trace given back), a session
opened, a redo under new experiments or a new record dtype, the fall-back to the CPU. What names a trace
(replay_arguments, redo_arguments), whether the decoder holds what a Replay asks already (holds), and the steps
of a rebuild once its prompt is prefilled (replay_steps). The prefill, its progress and its Cancel stay with
decode_loop.DecodeLoop, which owns the decoder."""
from __future__ import annotations

from collections.abc import Callable

from explorer.app.thread.requests import Replay
from explorer.views import trace_views


def replay_arguments(trace) -> dict:
    """The prompt ids, forced tokens, step count and chosen ids that rebuild `trace` exactly."""
    forced = tuple((index, int(step.chosen_id)) for index, step in enumerate(trace.steps) if step.forced)
    chosen = [step.chosen_id for step in trace.steps]
    return {"ids": tuple(int(i) for i in trace_views.started_ids(trace)), "forced": forced, "n_steps": trace.n_steps,
            "decoded": tuple(int(i) for i in chosen) if None not in chosen else ()}


def holds(trace, request: Replay) -> bool:
    """Whether `trace` is the one `request` rebuilds; its chosen ids count only where the request names them."""
    if not trace.steps:
        return False
    made = replay_arguments(trace)
    return (made["ids"] == request.ids and made["forced"] == request.forced and made["n_steps"] == request.n_steps
            and (not request.decoded or made["decoded"] == request.decoded))


def redo_arguments(trace, keep_decoded: bool) -> tuple:
    """The prompt ids (a translation's, its source), forced tokens {step: id}, step count and decoded ids that run
    `trace` again under new settings. Its forced tokens stay the person's. Its sampled ones are taken again as the
    sampler's (decoded) where the new setting changes no choice (`keep_decoded`: a record dtype), else decided
    again (decoded empty: experiments, a branch of what the changed model chooses)."""
    steps = trace.steps
    encoded = trace.encoder if trace.model.is_encoder_decoder else None
    forced = {index: step.chosen_id for index, step in enumerate(steps) if step.forced}
    chosen = [step.chosen_id for step in steps]
    decoded = tuple(int(i) for i in chosen) if keep_decoded and None not in chosen else ()
    return (encoded or steps[0]).token_ids, forced, len(steps), decoded


def replay_steps(decoder, trace, forced: dict, n_steps: int, decoded: tuple, check: Callable[[], None]):
    """From the prefilled `trace`, go to `n_steps` steps, forcing the chosen token of step i to forced[i], or
    taking decoded[i] as its choice (a saved trace's tokens: the seed or temperature may have changed since);
    `check()` before each step raises where the request was cancelled. The trace reached."""
    for index in range(n_steps):
        check()
        if index in forced:
            trace = decoder.force(forced[index])
        elif index < len(decoded) and trace.steps[-1].chosen_id != decoded[index]:
            trace = decoder.force(decoded[index], forced=False)
        if index < n_steps - 1:
            trace = decoder.step()
    return trace
