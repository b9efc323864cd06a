"""Step-by-step decoding that records every intermediate into an immutable Trace.

prefill(ids) runs the prompt, step() feeds the chosen token, back() undoes a
step (the KV cache shrinks), force(id) replaces the chosen token (a branch).
Each call captures one forward pass (capture.py: no hooks outlive it) and
returns a new Trace sharing the earlier records. A decoder given an
intervention.Intervention runs every pass under it: the steps after the prefill
reuse the prefill's prompt means, so the cached decode equals the uncached
forward under the same InterventionRun; back() and force() keep it.

`StepDecoder` holds these moves and the step's record for every model that
generates; `Decoder` is the decoder-only one, encdec_decode.EncDecDecoder the
encoder-decoder one.
"""
from __future__ import annotations

import time
from dataclasses import replace

import numpy as np
import torch

from explorer.core import logit_lens
from explorer.core.capture import StepCapture
from explorer.core.errors import ContextOverflowError, ExplorerError, NonFiniteError
from explorer.core.kv_cache import KVCache
from explorer.core.recording import RECORD_DTYPES, Recorder, RecordOptions, layer_records, top_candidates
from explorer.core.sampling import Sampling, choose
from explorer.core.trace import RopeAngles, StepRecord, Trace


class StepDecoder(Recorder):
    """The moves of a generating model over its KV cache; subclasses give the forward pass and the prefill."""

    can_generate = True
    prompt_name = "a prompt"                           # what prefill takes, for the errors of step and force
    full_context = "the context of {} tokens is full"

    def __init__(self, loaded, record: RecordOptions, sampling: Sampling, intervention=None):
        super().__init__(loaded, record, sampling, intervention)
        self._intervened = None                        # the prefill's InterventionRun (its prompt means)
        weight = self.model.embed.weight
        self.device, self.dtype = weight.device, weight.dtype
        self._hidden: list[torch.Tensor] = []          # per step: the states the logits come from (n_new, d)
        self.progress = None                           # progress(layers_done, n_layers) in a pass; may raise to stop

    # ----- the moves after prefill -----------------------------------------------------
    def step(self) -> Trace:
        """Feed the last chosen token and record one decoding step."""
        if not self.trace.steps:
            raise ExplorerError(f"nothing to continue: call prefill with {self.prompt_name} first")
        if self.kv_cache.length >= self.config.max_positions:
            raise ContextOverflowError(self.full_context.format(self.config.max_positions))
        token = np.array([self.trace.steps[-1].chosen_id], dtype=np.int64)
        self.trace = self._trace(self.trace.steps + (self._run(token, "decode"),))
        return self.trace

    def back(self) -> Trace:
        """Undo the last decoding step (the prompt itself stays); the cache forgets its tokens."""
        if len(self.trace.steps) <= 1:
            return self.trace
        steps = self.trace.steps[:-1]
        self._hidden.pop()
        self._truncate_cache(steps)
        self.trace = self._trace(steps)
        return self.trace

    def force(self, token_id: int, forced: bool = True) -> Trace:
        """Take `token_id` instead of the chosen next token (the next step() feeds it); `forced` marks it as the
        person's choice (False: a replayed trace's own token, the sampler's as it was drawn then)."""
        if not self.trace.steps:
            raise ExplorerError(f"nothing to force: call prefill with {self.prompt_name} first")
        self._check_ids(np.array([token_id]))
        last = replace(self.trace.steps[-1], chosen_id=int(token_id), forced=forced)
        self.trace = self._trace(self.trace.steps[:-1] + (last,))
        return self.trace

    def candidates_at(self, position: int, k: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The k most likely tokens after `position` and their probabilities softmax(h W_U): (k,), (k,).

        Recorded for each step's last position; for the earlier positions of a prompt they are
        computed here from the kept hidden state (one row of h W_U).
        """
        logits = torch.from_numpy(self.logits_at(position))[None]
        top_probs, top_ids = top_candidates(logits, k or self.record.top_k)
        return top_ids[0].numpy().astype(np.int64), top_probs[0].numpy()

    # ----- what subclasses provide -----------------------------------------------------
    def _trace(self, steps: tuple[StepRecord, ...]) -> Trace:
        raise NotImplementedError

    def _forward(self, ids: torch.Tensor, positions: np.ndarray, capture: StepCapture) -> torch.Tensor:
        """The final hidden states (n_new, d) of the new tokens, through and into the KV cache."""
        raise NotImplementedError

    def _pos_embeddings(self, positions: np.ndarray) -> torch.Tensor | None:
        raise NotImplementedError

    def _truncate_cache(self, steps: tuple[StepRecord, ...]) -> None:
        self.kv_cache.truncate(sum(s.n_new for s in steps))

    def _skipped(self) -> frozenset:
        """Attention arrays the record options leave out of the trace."""
        return frozenset()

    def _cross(self, layer: int, captured):
        """The layer's cross-attention tensors to record and its arrays shared by every step
        (recording.layer_records), for a model that has one."""
        return None

    # ----- one recorded step -------------------------------------------------------------
    def _run(self, ids: np.ndarray, kind: str) -> StepRecord:
        started = time.perf_counter()
        positions = np.arange(self.kv_cache.length, self.kv_cache.length + len(ids), dtype=np.int64)
        capture = self._new_capture(len(ids), self.kv_cache.length)
        if self.progress is not None:
            _report_layers(capture, self.progress)
        with torch.inference_mode():
            ids_t = torch.as_tensor(ids, device=self.device)
            hidden = self._forward(ids_t, positions, capture)                           # (n_new, d)
            # The next token's distribution after the step's last position only: a prompt's
            # earlier positions get theirs on demand (candidates_at), as transformers' generate
            # keeps only the last logits; h W_U for every prompt position was a fifth of a prefill.
            logits = self._next_logits(hidden)                                           # (1, V)
            try:
                refuse_non_finite(logits, self.loaded, "logits", first_position=int(positions[-1]))
            except NonFiniteError:
                self._truncate_cache(self.trace.steps)     # the cache forgets the pass that is not kept
                raise
            top_probs, top_ids = top_candidates(logits, self.record.top_k)
            self._hidden.append(hidden)
            pos_embeddings = self._pos_embeddings(positions)
            record = StepRecord(
                kind=kind, positions=positions, token_ids=ids.copy(), token_text=self._texts(ids),
                embeddings=self._np(self.model.embed.weight[ids_t]), layers=self._layer_records(capture),
                top_ids=top_ids.cpu().numpy().astype(np.int64), top_probs=top_probs.cpu().numpy(),
                chosen_id=choose(logits[-1], self.sampling, int(positions[-1]) + 1),
                pos_embeddings=None if pos_embeddings is None else self._np(pos_embeddings))
        return replace(record, ms=(time.perf_counter() - started) * 1000.0)

    def _next_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """The logits after the pass's last row (1, V) (packed.PackedDecoder gives its batch's at once)."""
        return self.model.logits(hidden[-1:])

    def _layer_records(self, capture: StepCapture) -> tuple:
        return layer_records(capture.layers, RECORD_DTYPES[self.record.dtype], self.kv_cache.bytes_in_use(),
                             self.kv_cache.bytes_allocated(), self._skipped() | self.record.derived, self._cross)


class Decoder(StepDecoder):
    """One sequence through one decoder-only model, with a preallocated KV cache and a growing Trace."""

    def __init__(self, loaded, record: RecordOptions = RecordOptions(), sampling: Sampling = Sampling(),
                 capacity: int | None = None, intervention=None):
        super().__init__(loaded, record, sampling, intervention)
        self.kv_cache = KVCache(self.config, capacity or 1024, self.dtype, self.device)
        rotary = self.model.rotaries.get("global")
        self._inv_freq = None if rotary is None else rotary.inv_freq.numpy().astype(np.float32)
        self._rope = rope_angles(self.model)
        self.trace = self._trace(())

    def prefill(self, ids) -> Trace:
        """Reset and run the prompt; the step's chosen_id is the first generated token."""
        ids = np.asarray(getattr(ids, "ids", ids), dtype=np.int64).reshape(-1)
        if ids.size == 0:
            raise ExplorerError("the prompt is empty: give at least one token")
        self._check_ids(ids)
        if ids.size > self.config.max_positions:
            raise ContextOverflowError(
                f"the prompt has {ids.size} tokens, more than the model's context of {self.config.max_positions}")
        self.kv_cache.reset()
        self._hidden = []
        self.trace = self._trace(())                   # the cache is empty, so is the trace until the prompt ran
        self._intervened = self.new_run()
        self.trace = self._trace((self._run(ids, "prefill"),))
        return self.trace

    # ----- on demand ---------------------------------------------------------------------
    def logits_at(self, position: int) -> np.ndarray:
        """Full-vocabulary logits (V,) predicted at `position`, recomputed from its hidden state."""
        step = self.trace.step_of_position(position)
        offset = position - sum(s.n_new for s in self.trace.steps[:step])
        with torch.inference_mode():
            logits = self.model.logits(self._hidden[step][offset: offset + 1])[0]
        return logits.float().cpu().numpy()

    def logit_lens(self, position: int, k: int = 5) -> tuple[np.ndarray, np.ndarray]:
        """Top-k next tokens read from the residual stream after each layer: ids and probs, (L, k);
        `position` alone is fed against the cache cut before it (explorer.core.logit_lens)."""
        return logit_lens.logit_lens(self, position, k)

    # ----- internals ---------------------------------------------------------------------
    def _trace(self, steps: tuple[StepRecord, ...]) -> Trace:
        return Trace(model=self.loaded.info, steps=steps, rope_inv_freq=self._inv_freq, rope=self._rope)

    def _forward(self, ids: torch.Tensor, positions: np.ndarray, capture: StepCapture) -> torch.Tensor:
        return self.model(ids, positions, self.kv_cache, capture, self._intervened)     # (n_new, d)

    def _pos_embeddings(self, positions: np.ndarray) -> torch.Tensor | None:
        return None if self.model.pos is None else self.model.pos.weight[positions]     # learned (GPT-2) only

    def _truncate_cache(self, steps: tuple[StepRecord, ...]) -> None:
        if not self.kv_cache.truncate(sum(s.n_new for s in steps)):
            self._rebuild_cache(np.concatenate([s.token_ids for s in steps]))

    def _rebuild_cache(self, ids: np.ndarray) -> None:
        """A sliding ring forgot positions that are needed again: recompute the cache."""
        self.kv_cache.reset()
        with torch.inference_mode():
            self.model(torch.as_tensor(ids, device=self.device), np.arange(len(ids)), self.kv_cache, None,
                       self._intervened)

    def _skipped(self) -> frozenset:
        return frozenset(({"head_out"} if not self.record.head_out else set()) | (
            {"q_pre_rope", "k_pre_rope"} if not self.record.pre_rope else set()))


def rope_angles(model) -> tuple[RopeAngles | None, ...]:
    """Per layer, how its attention rotates Q and K (for the trace to rotate them back)."""
    shared: dict[tuple, RopeAngles] = {}
    out = []
    for block in model.layers:
        attn = block.attn
        kind = getattr(attn, "rope", "global")                       # MLA rotates with the global table
        if kind is None:
            out.append(None)
            continue
        start = getattr(attn, "d_nope", 0)                           # MLA: only the decoupled d_R part
        rotary = model.rotaries[kind]
        key = (kind, start)
        if key not in shared:
            shared[key] = RopeAngles(inv_freq=rotary.inv_freq.numpy().astype(np.float32),
                                     factor=float(rotary.attention_factor), interleave=rotary.interleave,
                                     start=start)
        out.append(shared[key])
    return tuple(out)


def refuse_non_finite(values: torch.Tensor, loaded, what: str, first_position: int = 0,
                      forward: str = "the forward pass") -> None:
    """NonFiniteError naming the model and the first position whose row of `values` (T, n) holds a NaN or
    an Inf: a decoder's logits, an encoder's output states. Finite weights can still overflow float32 in
    the forward pass, and every number after that is meaningless. Row r is position first_position + r."""
    finite = torch.isfinite(values).all(dim=-1)                                 # (T,)
    if bool(finite.all()):
        return
    position = first_position + int((~finite).nonzero()[0, 0])
    model = getattr(loaded, "path", None) or loaded.name
    raise NonFiniteError(f"{model}: {forward} at position {position} gave NaN or infinite {what}, so its numbers "
                         "would be meaningless; check the model's weights and config.")


def _report_layers(capture: StepCapture, progress) -> None:
    """Call progress(layers_done, n_layers) as each layer's block is captured (a long prefill's progress bar)."""
    block = capture.block

    def reporting(layer: int, **tensors) -> None:
        block(layer, **tensors)
        progress(layer + 1, len(capture.layers))

    capture.block = reporting
