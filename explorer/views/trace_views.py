"""Which attention a panel shows, for every kind of model, as a Trace the panels already know how to draw.

    "self"     the decoder's masked self-attention (the only kind of a decoder-only model;
               of an encoder-only model, its one full-mask pass):       trace.attention(l)
    "cross"    an encoder-decoder's cross-attention, Q from the target, K = V = C from the
               encoder output (N_Q target rows × N_KV source columns):  trace.attention(l, cross=True)
    "encoder"  an encoder-decoder's encoder self-attention over the source (full mask),
               recorded once in trace.encoder:                          encoder_view(trace).attention(l)

`view(trace, kind, step)` answers with the Trace, step and cross flag to draw, so
that the panels' and the exports' code is the same for all three. Numpy only.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from explorer.core.trace import Trace
from explorer.views.caches import LastOf

LABELS = {"encoder": "encoder self-attention", "self": "decoder self-attention (masked)",
          "cross": "cross-attention (decoder → encoder)"}
TIPS = {"encoder": "the encoder reads the whole source at once: every source token attends to every other",
        "self": "each target token attends to itself and the target tokens before it",
        "cross": "Q from the decoder (target rows), K = V = C from the encoder output (source columns)"}
# The bytes of one element at the compute dtypes the app offers.
_DTYPE_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2, "float64": 8}


def kinds_of(info) -> tuple[str, ...]:
    """The attention kinds a model has: encoder-decoders three, every other model one."""
    if info is not None and info.is_encoder_decoder:
        return ("encoder", "self", "cross")
    return ("self",)


def kind_for(info, kind: str) -> str:
    """`kind` if the model has it, else "self"."""
    return kind if kind in kinds_of(info) else "self"


@dataclass(frozen=True)
class View:
    """What to draw: a Trace whose `attention(l, step, cross)` is the kind asked for."""

    trace: Trace
    step: int | None
    cross: bool
    kind: str

    @property
    def n_layers(self) -> int:
        return self.trace.model.n_layers

    def row_text(self) -> tuple[str, ...]:
        """The query tokens: the target (self, cross) or the source (encoder)."""
        return self.trace.token_text

    def column_text(self) -> tuple[str, ...]:
        """The key tokens: the source for cross-attention, else the same as the rows."""
        if self.cross and self.trace.encoder is not None:
            return self.trace.encoder.token_text
        return self.trace.token_text


def view(trace: Trace, kind: str = "self", step: int | None = None) -> View:
    """The Trace, step and cross flag that draw attention of `kind` (unknown kinds fall back to "self")."""
    kind = kind_for(trace.model, kind)
    if kind == "encoder" and trace.encoder is not None:
        return View(encoder_view(trace), None, False, kind)
    return View(trace, step, kind == "cross", kind)


def encoder_view(trace: Trace) -> Trace:
    """The encoder pass of an encoder-decoder trace as a Trace of its own: one "encode" step over the source
    (the same object while the same trace is asked about: panels ask on every repaint)."""
    return _ENCODER_VIEWS(trace)


def _encoder_view(trace: Trace) -> Trace:
    encoder = trace.encoder
    n_layers = len(encoder.layers)
    info = replace(trace.model, n_layers=n_layers, layer_kinds=("full",) * n_layers, is_encoder_only=True,
                   is_encoder_decoder=False)
    return Trace(model=info, steps=(encoder,), encoder=encoder)


_ENCODER_VIEWS = LastOf(_encoder_view)        # the last trace's view only: it holds one trace at most


def started_ids(trace: Trace) -> np.ndarray:
    """The ids a trace was started from: the source an encoder-decoder read (task token included),
    else the prompt of the first step. Prefilling them again rebuilds the trace."""
    if trace.model.is_encoder_decoder and trace.encoder is not None:
        return np.asarray(trace.encoder.token_ids, dtype=np.int64)
    return np.asarray(trace.steps[0].token_ids, dtype=np.int64)


def element_bytes(info) -> int:
    """Bytes of one number at the model's compute dtype (the cache holds K/V at that dtype)."""
    return _DTYPE_BYTES.get(info.dtype, 4)


def cross_kv_bytes(trace: Trace) -> np.ndarray:
    """Bytes of each decoder layer's cross-attention K and V: N_KV · S · (d_QK + d_V) · bytes per element.

    Computed once from the encoder output C, so the same at every step: (L,), zeros without cross-attention.
    """
    info = trace.model
    if not trace.steps or trace.steps[0].layers[0].cross is None:
        return np.zeros(info.n_layers, dtype=np.int64)
    element = element_bytes(info)
    sizes = []
    for layer in trace.steps[0].layers:
        k, v = layer.cross.k, layer.cross.v                       # (N_KV, S, d_QK), (N_KV, S, d_V)
        sizes.append((k.shape[0] * k.shape[1] * k.shape[2] + v.shape[0] * v.shape[1] * v.shape[2]) * element)
    return np.asarray(sizes, dtype=np.int64)
