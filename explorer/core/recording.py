"""From one forward pass's StepCapture to the trace's records, for every driver.

decode.Decoder, encdec_decode.EncDecDecoder and encoder.EncoderRunner all run
a model with a StepCapture and turn what it holds into AttentionRecord,
LayerRecord and StepRecord here: arrays copied to numpy in the record dtype,
the residual norm ||h||, and the top-k next tokens p = softmax(logits).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from explorer.core.capture import StepCapture
from explorer.core.errors import ExplorerError
from explorer.core.trace import AttentionRecord, LayerRecord, StepRecord

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


def residual_norm(values: dict) -> np.ndarray:
    """||h|| of each new token's residual stream after the layer: (n_new,)."""
    return torch.linalg.vector_norm(values["residual"].float(), dim=-1).cpu().numpy()


def attention_record(values: dict, to_np, prefix: str = "", skipped=frozenset(), **shared) -> AttentionRecord:
    """An AttentionRecord from one layer's captured values (`prefix` "cross_" for cross-attention).

    Arrays the layer did not capture, or named in `skipped`, stay None; `shared` replaces
    arrays that are the same at every step (the cross K/V), so they are stored once.
    """
    arrays = {}
    for name in ATTENTION_FIELDS:
        value = values.get(prefix + name)
        if name in shared:
            arrays[name] = shared[name]
        else:
            arrays[name] = None if value is None or name in skipped else to_np(value)
    return AttentionRecord(**arrays, mask=values[prefix + "mask"], kv_positions=values[prefix + "kv_positions"],
                           scale=float(values[prefix + "scale"]), softcap=values.get(prefix + "softcap"))


def layer_record(values: dict, to_np, kv_bytes_in_use: int = 0, kv_bytes_allocated: int = 0,
                 skipped=frozenset(), cross: AttentionRecord | None = None) -> LayerRecord:
    """One layer's LayerRecord: its input X, its attention, ||h|| after it and its cache bytes."""
    return LayerRecord(x=to_np(values["x"]), attn=attention_record(values, to_np, skipped=skipped),
                       residual_norm=residual_norm(values), kv_bytes_in_use=kv_bytes_in_use,
                       kv_bytes_allocated=kv_bytes_allocated, cross=cross)


class Recorder:
    """What every driver holds (the loaded model, record and sampling options) and how it records."""

    def __init__(self, loaded, record: RecordOptions, sampling):
        self.loaded, self.model, self.config = loaded, loaded.model, loaded.config
        self.record, self.sampling = record, sampling

    def set_sampling(self, sampling) -> None:
        self.sampling = sampling

    def _check_ids(self, ids: np.ndarray) -> None:
        bad = ids[(ids < 0) | (ids >= self.config.vocab_size)]
        if bad.size:
            raise ExplorerError(f"token id {int(bad[0])} is outside the vocabulary of {self.config.vocab_size}")

    def _np(self, tensor: torch.Tensor) -> np.ndarray:
        return tensor.detach().to("cpu", RECORD_DTYPES[self.record.dtype]).numpy()

    def _texts(self, ids: np.ndarray) -> tuple[str, ...]:
        tokenizer = self.loaded.tokenizer
        return tuple(tokenizer.display(int(i)) if tokenizer is not None else str(int(i)) for i in ids)

    def _encode_record(self, ids: np.ndarray, capture: StepCapture, embeddings: torch.Tensor,
                       pos_embeddings: torch.Tensor) -> StepRecord:
        """The "encode" StepRecord of a bidirectional pass over `ids`: full masks, no cache, no next token."""
        return StepRecord(
            kind="encode", positions=np.arange(len(ids), dtype=np.int64), token_ids=ids.copy(),
            token_text=self._texts(ids), embeddings=self._np(embeddings),
            layers=tuple(layer_record(values, self._np) for values in capture.layers),
            top_ids=np.zeros((len(ids), 0), dtype=np.int64), top_probs=np.zeros((len(ids), 0), dtype=np.float32),
            pos_embeddings=self._np(pos_embeddings))
