"""Step-by-step translation with an encoder-decoder, with the Decoder's API (decode.py).

prefill(source ids) encodes the source once (recorded as trace.encoder, full
mask), computes every decoder layer's cross-attention K = C W^K and V = C W^V
once, and runs the decoder on the start token <s>; step() feeds the chosen
target token; back() and force() work as for a decoder-only model. The
decoder's self-attention cache grows by one token per step; the cross K/V
stay the size of the source for the whole translation.

A source that does not begin with a task token (<2zh>, <2en>) gets one from
its script: Chinese characters ask for English, anything else for Chinese.
"""
from __future__ import annotations

import re
import time
from dataclasses import replace

import numpy as np
import torch

from explorer.core.capture import PaddedCapture, StepCapture
from explorer.core.decode import StepDecoder, refuse_non_finite
from explorer.core.encdec import TargetStep, padded
from explorer.core.encoder import ENCODER_OUTPUT
from explorer.core.errors import ContextOverflowError, ExplorerError
from explorer.core.kv_cache import HeadCache, LayerCaches
from explorer.core.recording import RecordOptions, attention_tensors, top_candidates
from explorer.core.sampling import Sampling
from explorer.core.trace import StepRecord, Trace

TO_ZH, TO_EN = "<2zh>", "<2en>"
CJK = re.compile(r"[\u3400-\u9fff]")


def task_token_for(text: str) -> str:
    """The direction a bare source implies: Chinese characters -> <2en>, anything else -> <2zh>."""
    return TO_EN if CJK.search(text) else TO_ZH


class EncDecCache(LayerCaches):
    """Per decoder layer: the self-attention K/V (grow by one token per step) and the cross K/V of C (fixed).

    length, truncate and the bytes per layer are those of the self-attention caches (they grow with the target).
    """

    def __init__(self, config, capacity: int, dtype: torch.dtype, device):
        capacity = max(1, min(capacity, config.max_positions))
        super().__init__([HeadCache(config.n_heads, config.d_head, config.d_head, capacity, config.max_positions,
                                    dtype, device) for _ in range(config.n_decoder_layers)])
        self.cross: list[tuple[torch.Tensor, torch.Tensor]] = []   # per layer: K, V of C, each (1, H, S, d)

    def reset(self) -> None:
        super().reset()
        self.cross = []

    def cross_bytes(self) -> list[int]:
        """Cross-attention bytes per layer: N_KV * S * (d_qk + d_v) elements, whatever the target length."""
        return [k.numel() * k.element_size() + v.numel() * v.element_size() for k, v in self.cross]


class EncDecDecoder(StepDecoder):
    """One translation through an encoder-decoder: the encoder pass, then one StepRecord per target token."""

    prompt_name = "a source text"
    full_context = "the target is full: {} tokens"

    def __init__(self, loaded, record: RecordOptions = RecordOptions(), sampling: Sampling = Sampling(),
                 capacity: int | None = None, intervention=None):
        super().__init__(loaded, record, sampling, intervention)
        self.kv_cache = EncDecCache(self.config, capacity or self.config.max_positions, self.dtype, self.device)
        self._cross_np: list[dict] = []                  # per layer: the recorded cross K, V (shared by all steps)
        self._encoded: StepRecord | None = None
        self.trace = Trace(model=loaded.info)

    def prefill(self, ids) -> Trace:
        """Encode the source (a task token is added if missing) and run the decoder on <s>."""
        source = self.checked_source(ids)
        self._reset()
        self._encoded = self._encode(source)
        return self._start()

    def checked_source(self, ids) -> np.ndarray:
        """The ids the encoder reads (source_ids), within the model's positions."""
        source = self.source_ids(np.asarray(getattr(ids, "ids", ids), dtype=np.int64).reshape(-1))
        if source.size > self.config.max_positions:
            raise ContextOverflowError(
                f"the source has {source.size} tokens, more than the model's {self.config.max_positions} positions")
        return source

    def prefill_encoded(self, source: np.ndarray, capture: StepCapture, memory: torch.Tensor, ms: float) -> Trace:
        """prefill(source), its encoder pass given: its capture and C (1, S, d_model) (prefill_padded)."""
        self._reset()
        with torch.inference_mode():
            self._encoded = replace(self._encoded_record(source, capture, memory), ms=ms)
        return self._start()

    def _reset(self) -> None:
        self.kv_cache.reset()
        self._hidden = []
        self._encoded, self.trace = None, Trace(model=self.loaded.info)   # the cache is empty, so is the trace
        self._intervened = self.new_run()

    def _start(self) -> Trace:
        """The decoder's first step, on <s>."""
        first = self._run(np.array([self.config.bos_id], dtype=np.int64), "prefill")
        self.trace = self._trace((first,))
        return self.trace

    # ----- on demand ---------------------------------------------------------------------
    def source_ids(self, ids: np.ndarray) -> np.ndarray:
        """The ids the encoder reads: `ids`, behind the task token its script implies when it has none."""
        if ids.size == 0:
            raise ExplorerError("the source text is empty: give at least one token")
        self._check_ids(ids)
        tokenizer = self.loaded.tokenizer
        tasks = {tokenizer.tokenizer.token_to_id(t) for t in (TO_ZH, TO_EN)} - {None} if tokenizer else set()
        if not tasks or int(ids[0]) in tasks:
            return ids
        task = tokenizer.tokenizer.token_to_id(task_token_for(tokenizer.decode(ids)))
        return np.concatenate(([task], ids)).astype(np.int64)

    def logits_at(self, position: int) -> np.ndarray:
        """Full-vocabulary logits (V,) predicted after the target token at `position`."""
        step = self.trace.step_of_position(position)
        with torch.inference_mode():
            return self.model.logits(self._hidden[step][-1]).float().cpu().numpy()

    def logit_lens(self, position: int, k: int = 5) -> tuple[np.ndarray, np.ndarray]:
        """Top-k next tokens read from the decoder's stream after each layer (post-LN: already normed): (L, k)."""
        ids = torch.as_tensor(self.trace.token_ids[: position + 1], device=self.device)[None]
        capture = StepCapture(self.config.n_layers)
        with torch.inference_mode():
            self.model.decode(ids, TargetStep(np.arange(ids.shape[1]), None, self._intervened), self.kv_cache.cross,
                              None, capture)
            residuals = torch.stack([layer.residual[-1] for layer in capture.layers])  # (L, d)
            top_probs, top_ids = top_candidates(self.model.logits(residuals), k)
        return top_ids.cpu().numpy().astype(np.int64), top_probs.cpu().numpy()

    # ----- internals ---------------------------------------------------------------------
    def _trace(self, steps: tuple[StepRecord, ...]) -> Trace:
        return Trace(model=self.loaded.info, steps=steps, encoder=self._encoded)

    def _encode(self, source: np.ndarray) -> StepRecord:
        """C = Encoder(source), the cross K/V of every layer, and the encoder's StepRecord."""
        started = time.perf_counter()
        capture = StepCapture(self.config.n_encoder_layers)
        with torch.inference_mode():
            source_t = torch.as_tensor(source, device=self.device)
            memory = self.model.encode(source_t[None], None, capture, self._intervened)  # C: (1, S, d_model)
            record = self._encoded_record(source, capture, memory)
        return replace(record, ms=(time.perf_counter() - started) * 1000.0)

    def _encoded_record(self, source: np.ndarray, capture: StepCapture, memory: torch.Tensor) -> StepRecord:
        """The cross K/V of every layer from C (1, S, d_model), and the encoder's StepRecord."""
        refuse_non_finite(memory[0], self.loaded, **ENCODER_OUTPUT)
        self.kv_cache.cross = self.model.cross_keys_values(memory)                 # once per source
        self._cross_np = [{"k": self._np(k[0]), "v": self._np(v[0])} for k, v in self.kv_cache.cross]
        embedded = self.model.embed.weight[torch.as_tensor(source, device=self.device)]
        return self._encode_record(source, capture, embedded,
                                   self.model.positional(np.arange(len(source), dtype=np.int64)))

    def _forward(self, ids: torch.Tensor, positions: np.ndarray, capture: StepCapture) -> torch.Tensor:
        return self.model.decode(ids[None], TargetStep(positions, None, self._intervened), self.kv_cache.cross,
                                 self.kv_cache, capture)[0]                         # (n_new, d)

    def _pos_embeddings(self, positions: np.ndarray) -> torch.Tensor:
        return self.model.positional(positions)                                    # sinusoidal PE

    def _cross(self, layer: int, captured):
        shared = self._cross_np[layer]
        return attention_tensors(captured.cross, shared=shared), shared


def prefill_padded(decoders: list[EncDecDecoder], prompts: list) -> None:
    """Each decoder's prefill of its source, the encoder passes as one over the sources right-padded to the
    longest (padding keys hidden, each row's capture cut to its length: capture.PaddedCapture), the decoders'
    first steps each their own. Each row of C is its source's C alone: every encoder sublayer but attention
    is row-wise and a hidden key gets weight exactly 0. The decoders share one intervention, which the
    encoder pass runs (see encoder.prefill_padded)."""
    first = decoders[0]
    sources = [decoder.checked_source(one) for decoder, one in zip(decoders, prompts)]
    lengths = [len(one) for one in sources]
    longest, device = max(lengths), first.device
    batch = np.zeros((len(sources), longest), dtype=np.int64)                   # padded with id 0, never seen
    for row, one in enumerate(sources):
        batch[row, : len(one)] = one
    visible = torch.as_tensor(np.arange(longest)[None, :] < np.array(lengths)[:, None], device=device)  # (B, S)
    captures = [StepCapture(first.config.n_encoder_layers) for _ in decoders]
    own = {n: padded(np.arange(n), n, None, device) for n in set(lengths)}      # what each source's pass sees
    started = time.perf_counter()
    with torch.inference_mode():
        memory = first.model.encode(torch.as_tensor(batch, device=device), visible[:, None, None, :],
                                    PaddedCapture(captures, lengths, own.__getitem__),   # C: (B, S, d_model)
                                    first.new_run())
    ms = (time.perf_counter() - started) * 1000.0 / len(decoders)
    for row, (decoder, source, capture) in enumerate(zip(decoders, sources, captures)):
        decoder.prefill_encoded(source, capture, memory[row: row + 1, : lengths[row]].clone(), ms)
