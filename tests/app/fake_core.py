"""A tests-only double of the core: a decoder that returns small synthetic Traces.

It follows the Decoder contract (prefill/step/back/force each return a new Trace;
back drops the last step) with a deterministic rule for the next token, so the
worker's queueing can be tested without torch. A `gate` lets a test hold a step
in flight while it presses buttons.
"""
from __future__ import annotations

import threading

import numpy as np

from explorer.app.thread.core_api import CoreApi
from explorer.core.errors import ModelLoadError
from explorer.core.tokens import Tokens
from explorer.core.trace import AttentionRecord, LayerRecord, ModelInfo, StepRecord, Trace, packed

VOCAB = 50
LAYERS, HEADS, KV_HEADS, D = 2, 4, 2, 8


class FakeTokenizer:
    """One token per character: id = ord(c) % VOCAB, with a BOS of 1."""

    bos_id, eos_id, vocab_size = 1, 2, VOCAB

    def encode(self, text: str) -> Tokens:
        ids = np.array([self.bos_id] + [ord(c) % VOCAB for c in text], dtype=np.int64)
        spans = ((0, 0),) + tuple((i, i + 1) for i in range(len(text)))
        return Tokens(ids=ids, text=("<s>",) + tuple(text), spans=spans,
                      special=np.array([True] + [False] * len(text)),
                      raw=(b"",) + tuple(c.encode("utf-8", "replace") for c in text), source=text)

    def display(self, token_id: int) -> str:
        return f"t{token_id}"

    def decode(self, ids) -> str:
        return " ".join(self.display(i) for i in ids)

    def token_bytes(self, token_id: int) -> bytes:
        """As core.tokens.Tokenizer's: the BOS and EOS stand for no bytes."""
        return b"" if token_id in (self.bos_id, self.eos_id) else chr(token_id).encode("utf-8")


def model_info(name: str = "fake", device: str = "cpu") -> ModelInfo:
    return ModelInfo(name=name, family="llama", attention="gqa", n_layers=LAYERS, n_heads=HEADS,
                     n_kv_heads=KV_HEADS, d_model=16, d_qk=D, d_v=D, vocab_size=VOCAB, max_positions=64,
                     n_params=12345, dtype="float32", device=device, layer_kinds=("causal",) * LAYERS)


def _layer(rng, n_new: int, first: int) -> LayerRecord:
    n_kv = first + n_new
    mask = np.arange(n_kv)[None, :] <= (first + np.arange(n_new))[:, None]
    weights = rng.random((HEADS, n_new, n_kv)).astype(np.float32) * mask
    weights /= weights.sum(-1, keepdims=True)
    attn = AttentionRecord(q=rng.standard_normal((HEADS, n_new, D)).astype(np.float32),
                           k=rng.standard_normal((KV_HEADS, n_new, D)).astype(np.float32),
                           v=rng.standard_normal((KV_HEADS, n_new, D)).astype(np.float32),
                           weights_packed=packed(weights, mask), mask=mask, kv_positions=np.arange(n_kv),
                           scale=D ** -0.5)
    return LayerRecord(x=rng.standard_normal((n_new, 16)).astype(np.float32), attn=attn,
                       residual_norm=np.ones(n_new, np.float32), kv_bytes_in_use=n_kv * 2 * KV_HEADS * D * 4,
                       kv_bytes_allocated=64 * 2 * KV_HEADS * D * 4)


def next_token(last_id: int, temperature: float, seed: int) -> int:
    return int((last_id * 7 + 3 + (seed if temperature > 0 else 0)) % VOCAB)


class FakeDecoder:
    def __init__(self, loaded, sampling) -> None:
        self.loaded = loaded
        self.sampling = sampling
        self.trace = Trace(model=loaded.info)
        self.gate: threading.Event | None = loaded.gate
        self.calls: list[str] = []

    def _record(self, kind: str, ids) -> StepRecord:
        if self.gate is not None:
            self.gate.wait(10)
        first = self.trace.n_tokens
        n_new = len(ids)
        rng = np.random.default_rng(first * 1000 + int(ids[-1]))
        top = np.array([[next_token(int(i), 0, 0), (int(i) + 1) % VOCAB, (int(i) + 2) % VOCAB] for i in ids])
        return StepRecord(kind=kind, positions=np.arange(first, first + n_new), token_ids=np.asarray(ids, np.int64),
                          token_text=tuple(f"t{i}" for i in ids),
                          embeddings=rng.standard_normal((n_new, 16)).astype(np.float32),
                          layers=tuple(_layer(rng, n_new, first) for _ in range(LAYERS)),
                          top_ids=top, top_probs=np.tile([0.5, 0.3, 0.2], (n_new, 1)),
                          chosen_id=next_token(int(ids[-1]), self.sampling.temperature, self.sampling.seed), ms=1.0)

    def prefill(self, ids) -> Trace:
        self.calls.append("prefill")
        self.trace = Trace(model=self.loaded.info)
        if len(ids) == 0:
            raise ValueError("empty prompt")
        self.trace = Trace(model=self.loaded.info, steps=(self._record("prefill", list(ids)),))
        return self.trace

    def step(self) -> Trace:
        self.calls.append("step")
        record = self._record("decode", [self.trace.steps[-1].chosen_id])
        self.trace = Trace(model=self.loaded.info, steps=self.trace.steps + (record,))
        return self.trace

    def back(self) -> Trace:
        self.calls.append("back")
        self.trace = Trace(model=self.loaded.info, steps=self.trace.steps[:-1])
        return self.trace

    def force(self, token_id: int, forced: bool = True) -> Trace:
        self.calls.append(f"force {token_id}")
        from dataclasses import replace

        last = replace(self.trace.steps[-1], chosen_id=int(token_id), forced=forced)
        self.trace = Trace(model=self.loaded.info, steps=self.trace.steps[:-1] + (last,))
        return self.trace

    def set_sampling(self, sampling) -> None:
        self.sampling = sampling

    def logit_lens(self, position: int, k: int = 5):
        ids = np.tile(np.arange(k), (LAYERS + 1, 1)) + position
        return ids % VOCAB, np.full((LAYERS + 1, k), 1.0 / k)


class FakeLoaded:
    def __init__(self, path: str, device: str, gate=None) -> None:
        self.name = str(path).rsplit("/", 1)[-1]
        self.path = str(path)
        self.info = model_info(self.name, device)
        self.tokenizer = FakeTokenizer()
        self.license = "Apache-2.0"
        self.gate = gate


class OutOfMemoryError(RuntimeError):
    """Named like torch.cuda.OutOfMemoryError, which the worker recognises by name."""


class FakeCore:
    """Builds a CoreApi of doubles; `broken` paths fail to load, `oom_devices` run out of memory."""

    def __init__(self) -> None:
        self.gate: threading.Event | None = None
        self.broken: set[str] = set()
        self.oom_devices: set[str] = set()
        self.decoders: list[FakeDecoder] = []
        self.loads: list[tuple[str, str]] = []

    def load_model(self, path, device="cpu", dtype="float32", progress=None):
        self.loads.append((str(path), device))
        if progress is not None:
            progress(0.5, "reading weights")
        if str(path) in self.broken:
            raise ModelLoadError(f"{path}: the weights are truncated.")
        if device in self.oom_devices:
            raise OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return FakeLoaded(path, device, self.gate)

    def make_decoder(self, loaded, sampling, record_dtype="float32"):
        decoder = FakeDecoder(loaded, sampling)
        self.decoders.append(decoder)
        return decoder

    def api(self) -> CoreApi:
        return CoreApi(load_model=self.load_model, make_decoder=self.make_decoder, sampling=lambda s: s,
                       available_devices=lambda: {"cpu": ["float32", "bfloat16"]})
