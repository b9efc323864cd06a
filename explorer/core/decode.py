"""Step-by-step decoding that records every intermediate into an immutable Trace.

prefill(ids) runs the prompt, step() feeds the chosen token, back() undoes a
step (the KV cache shrinks), force(id) replaces the chosen token (a branch).
Each call captures one forward pass (capture.py: no hooks outlive it) and
returns a new Trace sharing the earlier records.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, replace

import numpy as np
import torch

from explorer.core.capture import StepCapture
from explorer.core.errors import ContextOverflowError, ExplorerError
from explorer.core.kv_cache import KVCache
from explorer.core.sampling import Sampling, choose
from explorer.core.trace import AttentionRecord, LayerRecord, StepRecord, Trace

RECORD_DTYPES = {"float32": torch.float32, "float16": torch.float16}
ATTENTION_FIELDS = ("q", "k", "v", "weights", "q_pre_rope", "k_pre_rope", "head_out", "latent", "k_rope")


@dataclass(frozen=True)
class RecordOptions:
    """How the trace stores its arrays: float32 or float16, and how many next-token candidates."""

    dtype: str = "float32"
    top_k: int = 10
    head_out: bool = True      # O_h = A_h V_h per head (derivable from weights and V)
    pre_rope: bool = True      # Q and K before RoPE (derivable by rotating back)

    def __post_init__(self):
        if self.dtype not in RECORD_DTYPES:
            raise ExplorerError(f"record dtype {self.dtype!r} is not float32 or float16")


def top_candidates(logits: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The k most likely next tokens and their softmax probabilities, without a full softmax."""
    top_logits, top_ids = logits.topk(k, dim=-1)                                        # (n, k)
    log_z = torch.logsumexp(logits.float(), dim=-1, keepdim=True)                       # (n, 1)
    return torch.exp(top_logits.float() - log_z), top_ids


class Decoder:
    """One sequence through one model, with a preallocated KV cache and a growing Trace."""

    def __init__(self, loaded, record: RecordOptions = RecordOptions(), sampling: Sampling = Sampling(),
                 capacity: int | None = None):
        self.loaded, self.model, self.config = loaded, loaded.model, loaded.config
        self.record, self.sampling = record, sampling
        weight = self.model.embed.weight
        self.device, self.dtype = weight.device, weight.dtype
        self.kv_cache = KVCache(self.config, capacity or 1024, self.dtype, self.device)
        self._hidden: list[torch.Tensor] = []          # per step: final-normed hidden states (n_new, d)
        rotary = self.model.rotaries.get("global")
        self._inv_freq = None if rotary is None else rotary.inv_freq.numpy().astype(np.float32)
        self.trace = self._trace(())

    # ----- the four moves ----------------------------------------------------------
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
        self.trace = self._trace((self._run(ids, "prefill"),))
        return self.trace

    def step(self) -> Trace:
        """Feed the last chosen token and record one decoding step."""
        if not self.trace.steps:
            raise ExplorerError("nothing to continue: call prefill with a prompt first")
        if self.kv_cache.length >= self.config.max_positions:
            raise ContextOverflowError(f"the context of {self.config.max_positions} tokens is full")
        token = np.array([self.trace.steps[-1].chosen_id], dtype=np.int64)
        self.trace = self._trace(self.trace.steps + (self._run(token, "decode"),))
        return self.trace

    def back(self) -> Trace:
        """Undo the last decoding step (the prompt itself stays); the cache forgets its tokens."""
        if len(self.trace.steps) <= 1:
            return self.trace
        steps = self.trace.steps[:-1]
        self._hidden.pop()
        length = sum(s.n_new for s in steps)
        if not self.kv_cache.truncate(length):
            self._rebuild_cache(np.concatenate([s.token_ids for s in steps]))
        self.trace = self._trace(steps)
        return self.trace

    def force(self, token_id: int) -> Trace:
        """Take `token_id` instead of the chosen next token (the next step() feeds it)."""
        if not self.trace.steps:
            raise ExplorerError("nothing to force: call prefill with a prompt first")
        self._check_ids(np.array([token_id]))
        last = replace(self.trace.steps[-1], chosen_id=int(token_id), forced=True)
        self.trace = self._trace(self.trace.steps[:-1] + (last,))
        return self.trace

    def set_sampling(self, sampling: Sampling) -> None:
        self.sampling = sampling

    # ----- on demand ---------------------------------------------------------------------
    def logits_at(self, position: int) -> np.ndarray:
        """Full-vocabulary logits (V,) predicted at `position`, recomputed from its hidden state."""
        step = self.trace.step_of_position(position)
        offset = position - sum(s.n_new for s in self.trace.steps[:step])
        with torch.inference_mode():
            logits = self.model.logits(self._hidden[step][offset: offset + 1])[0]
        return logits.float().cpu().numpy()

    def logit_lens(self, position: int, k: int = 5) -> tuple[np.ndarray, np.ndarray]:
        """Top-k next tokens read from the residual stream after each layer: ids and probs, (L, k)."""
        ids = self.trace.token_ids[: position + 1]
        capture = StepCapture(self.config.n_layers)
        with torch.inference_mode():
            self.model(torch.as_tensor(ids, device=self.device), np.arange(len(ids)), None, capture)
            residuals = torch.stack([layer["residual"][-1] for layer in capture.layers])  # (L, d)
            probs = torch.softmax(self.model.logits(self.model.norm(residuals)).float(), dim=-1)
            top_probs, top_ids = probs.topk(k, dim=-1)
        return top_ids.cpu().numpy().astype(np.int64), top_probs.cpu().numpy()

    # ----- internals ---------------------------------------------------------------------
    def _trace(self, steps: tuple[StepRecord, ...]) -> Trace:
        return Trace(model=self.loaded.info, steps=steps, rope_inv_freq=self._inv_freq)

    def _check_ids(self, ids: np.ndarray) -> None:
        bad = ids[(ids < 0) | (ids >= self.config.vocab_size)]
        if bad.size:
            raise ExplorerError(f"token id {int(bad[0])} is outside the vocabulary of {self.config.vocab_size}")

    def _rebuild_cache(self, ids: np.ndarray) -> None:
        """A sliding ring forgot positions that are needed again: recompute the cache."""
        self.kv_cache.reset()
        with torch.inference_mode():
            self.model(torch.as_tensor(ids, device=self.device), np.arange(len(ids)), self.kv_cache, None)

    def _run(self, ids: np.ndarray, kind: str) -> StepRecord:
        start = time.perf_counter()
        positions = np.arange(self.kv_cache.length, self.kv_cache.length + len(ids), dtype=np.int64)
        capture = StepCapture(self.config.n_layers)
        with torch.inference_mode():
            ids_t = torch.as_tensor(ids, device=self.device)
            hidden = self.model(ids_t, positions, self.kv_cache, capture)               # (n_new, d)
            logits = self.model.logits(hidden)                                           # (n_new, V)
            top_probs, top_ids = top_candidates(logits, self.record.top_k)
            chosen = choose(logits[-1], self.sampling, int(positions[-1]) + 1)
            self._hidden.append(hidden)
            record = StepRecord(
                kind=kind, positions=positions, token_ids=ids.copy(), token_text=self._texts(ids),
                embeddings=self._np(self.model.embed.weight[ids_t]),
                layers=self._layer_records(capture),
                top_ids=top_ids.cpu().numpy().astype(np.int64), top_probs=top_probs.cpu().numpy(),
                chosen_id=chosen,
                pos_embeddings=None if self.model.pos is None else self._np(self.model.pos.weight[positions]),
            )
        return replace(record, ms=(time.perf_counter() - start) * 1000.0)

    def _texts(self, ids: np.ndarray) -> tuple[str, ...]:
        tokenizer = self.loaded.tokenizer
        return tuple(tokenizer.display(int(i)) if tokenizer is not None else str(int(i)) for i in ids)

    def _np(self, tensor: torch.Tensor) -> np.ndarray:
        return tensor.detach().to("cpu", RECORD_DTYPES[self.record.dtype]).numpy()

    def _layer_records(self, capture: StepCapture) -> tuple[LayerRecord, ...]:
        in_use, allocated = self.kv_cache.bytes_in_use(), self.kv_cache.bytes_allocated()
        skipped = ({"head_out"} if not self.record.head_out else set()) | (
            {"q_pre_rope", "k_pre_rope"} if not self.record.pre_rope else set())
        records = []
        for index, values in enumerate(capture.layers):
            arrays = {name: None if values.get(name) is None or name in skipped else self._np(values[name])
                      for name in ATTENTION_FIELDS}
            attn = AttentionRecord(**arrays, mask=values["mask"], kv_positions=values["kv_positions"],
                                   scale=float(values["scale"]), softcap=values["softcap"])
            norm = torch.linalg.vector_norm(values["residual"].float(), dim=-1)
            records.append(LayerRecord(x=self._np(values["x"]), attn=attn, residual_norm=norm.cpu().numpy(),
                                       kv_bytes_in_use=in_use[index], kv_bytes_allocated=allocated[index]))
        return tuple(records)
