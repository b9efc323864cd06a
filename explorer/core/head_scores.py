"""What each head does: scores on repeated random tokens, and a description on the user's own text.

On s = ids repeated R times (N = len(ids), T = R N, nothing prepended), with A a head's attention:

    previous_token = mean_{i=1..T-1} A[i, i-1]           (attends to the token before)
    induction      = mean_{i=N..T-1} A[i, i-N+1]         (attends to what followed this token last time;
                                                          Olsson et al. 2022, "In-context learning and induction heads")
    sink           = mean_{i=1..T-1} A[i, 0]             (parks its attention on the first token)

The description of heads on the user's own text is head_description.py (numpy over a trace).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from explorer.core.errors import ExplorerError
from explorer.core.trace import Trace

DEFAULT_LENGTH = 32      # random tokens per repeat when no ids are given
DEFAULT_SEED = 0


@dataclass(frozen=True)
class HeadScores:
    """Per layer and head (L, N_Q): the three scores on s = ids * repeat."""

    ids: tuple[int, ...]
    repeat: int
    previous_token: np.ndarray   # (L, N_Q)
    induction: np.ndarray        # (L, N_Q)
    sink: np.ndarray             # (L, N_Q)
    trace: Trace | None = field(default=None, compare=False, repr=False)   # the run on s, for examples

    def as_json(self) -> dict:
        return {"previous_token": self.previous_token.tolist(), "induction": self.induction.tolist(),
                "sink": self.sink.tolist()}


def pattern_scores(weights: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """previous_token, induction and sink of every head of one layer.

    weights: (N_Q, T, T) attention on a sequence that repeats its first n tokens -> three (N_Q,)
    """
    t = weights.shape[-1]
    rows = np.arange(1, t)
    previous = weights[:, rows, rows - 1].mean(axis=-1)
    sink = weights[:, rows, 0].mean(axis=-1)
    later = np.arange(n, t)
    induction = weights[:, later, later - n + 1].mean(axis=-1) if later.size else np.full(len(weights), np.nan)
    return previous, induction, sink


def repeated(ids, repeat: int, context: int) -> np.ndarray:
    """s = ids repeated `repeat` times, as an int64 array (T,), refused where T exceeds the model's `context`: before
    the array is made (a --repeat of 10^8 allocated 24 GB before the context was checked)."""
    ids = np.asarray(ids, dtype=np.int64).reshape(-1)
    if ids.size < 2:
        raise ExplorerError(f"{ids.size} token id(s) cannot show a pattern: give at least 2.")
    if repeat < 2:
        raise ExplorerError(f"--repeat {repeat} must be at least 2 for an induction score.")
    if ids.size * repeat > context:
        raise ExplorerError(f"{ids.size} ids repeated {repeat:,} times are {ids.size * repeat:,} tokens, more than the "
                            f"model's context of {context:,}.")
    return np.tile(ids, repeat)


def random_ids(vocab_size: int, length: int = DEFAULT_LENGTH, seed: int = DEFAULT_SEED,
               special: frozenset[int] = frozenset()) -> np.ndarray:
    """`length` distinct ids drawn from the model's vocabulary with a seeded generator, special ids left out."""
    pool = np.setdiff1d(np.arange(vocab_size), np.fromiter(special, dtype=np.int64, count=len(special)))
    rng = np.random.default_rng(seed)
    return rng.choice(pool, size=min(length, pool.size), replace=False).astype(np.int64)


class ScoringCancelled(ExplorerError):
    """The person cancelled (or the app quit) while the heads were scored."""


def _stop_if_cancelled(cancel) -> None:
    """`cancel` is None, a callable or anything with is_set() (the model thread's flag)."""
    if cancel is not None and (cancel.is_set() if hasattr(cancel, "is_set") else cancel()):
        raise ScoringCancelled("The scoring of the heads was cancelled.")


def _layer_scores(trace: Trace, layer: int, n: int, cancel) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    _stop_if_cancelled(cancel)
    return pattern_scores(trace.attention(layer).astype(np.float64), n)


def scores_of_trace(trace: Trace, n: int, repeat: int, cancel=None) -> HeadScores:
    """The three scores of every head from a trace of one prefill of s (its first n ids repeated);
    ScoringCancelled before a layer once `cancel` is set."""
    per_layer = [_layer_scores(trace, layer, n, cancel) for layer in range(trace.model.n_layers)]
    previous, induction, sink = (np.stack(parts) for parts in zip(*per_layer))
    return HeadScores(ids=tuple(int(i) for i in trace.token_ids[:n]), repeat=repeat,
                      previous_token=previous, induction=induction, sink=sink)


def score_heads(loaded, ids=None, repeat: int = 2, seed: int = DEFAULT_SEED, intervention=None,
                cancel=None) -> HeadScores:
    """Run the model on s = ids * repeat (random ids of its vocabulary when None), under `intervention`
    (None: the model as it is), and score every head; ScoringCancelled before the run, after each of its layers
    and before each layer's scores once `cancel` (None, a callable or an Event-like flag) is set."""
    # torch's modules, imported when a model runs: the app's torch-free atlas and head descriptions import this one
    from explorer.core.drivers import make_decoder
    from explorer.core.recording import RecordOptions

    if loaded.info.is_encoder_only or loaded.info.is_encoder_decoder:
        raise ExplorerError(f"{loaded.name} is not a decoder-only model: head scores read causal attention")
    if ids is None:
        ids = random_ids(loaded.config.vocab_size, seed=seed, special=special_ids(loaded))
    sequence = repeated(ids, repeat, loaded.config.max_positions)
    decoder = make_decoder(loaded, RecordOptions(dtype="float32", top_k=1), capacity=int(sequence.size))
    decoder.set_intervention(intervention)
    _stop_if_cancelled(cancel)
    if cancel is not None:          # and after each layer of the run: a quit mid-run waited the whole run (drive31)
        decoder.progress = lambda _done, _layers: _stop_if_cancelled(cancel)
    trace = decoder.prefill(sequence)
    return replace(scores_of_trace(trace, len(sequence) // repeat, repeat, cancel), trace=trace)


def score_heads_each(loaded, sequences: list, repeat: int = 2, intervention=None, budget: int | None = None
                     ) -> list[HeadScores]:
    """score_heads of each id sequence in `sequences`, their runs prefilled together in packed passes of at
    most `budget` bytes (packed.prefill_packed; None: pass_budget.default_budget) where the model and the
    intervention allow it, else one after another."""
    from explorer.core import packed, pass_budget  # torch, imported when a model runs (as score_heads)
    from explorer.core.recording import RecordOptions

    if not packed.can_record_packed(loaded, intervention):
        return [score_heads(loaded, ids, repeat, intervention=intervention) for ids in sequences]
    repeats = [repeated(ids, repeat, loaded.config.max_positions) for ids in sequences]
    decoders = [packed.PackedDecoder(loaded, RecordOptions(dtype="float32", top_k=1), capacity=int(s.size))
                for s in repeats]
    for decoder in decoders:
        decoder.set_intervention(intervention)
    for _ in packed.prefill_packed(loaded, decoders, repeats, budget or pass_budget.default_budget(loaded)):
        pass
    return [replace(scores_of_trace(d.trace, len(s) // repeat, repeat), trace=d.trace)
            for d, s in zip(decoders, repeats)]


def special_ids(loaded) -> frozenset[int]:
    """The ids a tokenizer marks special (BOS, EOS, ...), which random text would not contain."""
    tokenizer = loaded.tokenizer
    found = {loaded.config.bos_token_id, loaded.config.eos_token_id}
    if tokenizer is not None:
        found |= {i for i, token in tokenizer.tokenizer.get_added_tokens_decoder().items() if token.special}
    return frozenset(int(i) for i in found if i is not None)
