"""The trace: everything the model computed, step by step, as frozen numpy records.

The engine writes one `StepRecord` per call to prefill/step; the app only reads.
Imports numpy only (an import-linter contract enforces it), so the panels depend
on nothing heavier.

Notation (per layer l, head h): X is the normed attention input, Q_h = X W_h^Q,
K_h = X W_h^K, V_h = X W_h^V, S = Q_h K_h^T * scale (+ mask), A = softmax(S),
head output O_h = A V_h. Attention is always N_Q x N_KV: a step's new query rows
against every key position the cache holds at that moment. One sublayer's record and
the maps it rebuilds on demand are in attention_record.py (re-exported here).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from explorer.core import kernel as kernels
from explorer.core.attention_maps import MaskRule
from explorer.core.attention_record import KEPT, AttentionRecord, packed, run_slice  # noqa: F401 (re-exported)


@dataclass(frozen=True)
class ModelInfo:
    """What the panels need to know about the model that produced a trace."""

    name: str
    family: str                      # "gpt2", "llama", "gemma3", "deepseek", "bert", "encdec", ...
    attention: str                   # "mha" | "mqa" | "gqa" | "mla"
    n_layers: int
    n_heads: int                     # N_Q heads
    n_kv_heads: int                  # N_KV heads (1 for MLA's shared latent is not implied: see mla_rank)
    d_model: int
    d_qk: int                        # per-head query/key width (MLA: nope + rope)
    d_v: int                         # per-head value width
    vocab_size: int
    max_positions: int
    n_params: int
    dtype: str                       # compute dtype, e.g. "float32"
    device: str
    layer_kinds: tuple[str, ...]     # per layer: "causal" | "sliding" | "full"
    sliding_window: int | None = None
    positional: str = "rope"         # "rope" | "learned" | "sinusoidal" | "none"
    mla_rank: int | None = None      # d_c, the latent width of MLA
    mla_rope_dim: int | None = None  # d_R, the decoupled RoPE key width of MLA
    is_encoder_only: bool = False
    is_encoder_decoder: bool = False
    qk_norm: bool = False            # each head's queries and keys normalised before the scores (Qwen3, Gemma 3)


@dataclass(frozen=True)
class LayerRecord:
    """One transformer block at one step."""

    x: np.ndarray | None                 # (n_new, d_model)  normed attention input X; None: not kept (a
                                         # long prefill keeps Q, K, V only; activations.compute gives X)
    attn: AttentionRecord                # self-attention
    residual_norm: np.ndarray            # (n_new,) ||h|| of the residual stream after the block
    kv_bytes_in_use: int                 # this layer's cache bytes holding live tokens
    kv_bytes_allocated: int              # this layer's preallocated cache bytes
    cross: AttentionRecord | None = None  # encoder-decoder cross-attention (Q: decoder, K/V: C)


@dataclass(frozen=True)
class StepRecord:
    """One call into the engine: the prefill of a prompt, or one decoding step."""

    kind: str                            # "prefill" | "decode" | "encode"
    positions: np.ndarray                # (n_new,) int  absolute positions of the new tokens
    token_ids: np.ndarray                # (n_new,) int  the input ids of this step
    token_text: tuple[str, ...]          # display strings of those ids
    embeddings: np.ndarray               # (n_new, d_model)  the rows E[id]
    layers: tuple[LayerRecord, ...]
    top_ids: np.ndarray                  # (1, k) int   next-token candidates after the step's last position
    top_probs: np.ndarray                # (1, k) float their probabilities (earlier positions: on demand)
    chosen_id: int | None = None         # the token chosen after this step (sampled or forced)
    forced: bool = False                 # whether chosen_id was forced by the user
    pos_embeddings: np.ndarray | None = None  # (n_new, d_model) learned/sinusoidal positions
    ms: float = 0.0                      # wall time of the model step

    @property
    def n_new(self) -> int:
        return int(self.token_ids.shape[0])

    @cached_property
    def nbytes(self) -> int:
        """Memory held by the record's arrays, measured once: records are immutable and shared by
        every trace that follows, so a decoding step measures only its own record."""
        return nbytes_of(self)


@dataclass(frozen=True)
class RopeAngles:
    """How one layer rotated Q and K: pair i at position p turns by p * inv_freq[i] (RoPE).

    Enough to undo the rotation, so Q and K before RoPE need not be stored: rotating back
    by -p * inv_freq gives them within the record dtype's rounding.
    """

    inv_freq: np.ndarray          # (d_R/2,) float32
    factor: float = 1.0           # YaRN's attention factor, which scales cos and sin
    interleave: bool = False      # pairs (2i, 2i+1) instead of the rotate-half pairs (i, i + d_R/2)
    start: int = 0                # the rotated dims are [start, start + d_R) of d_qk (MLA: after the nope part)

    def unrotate(self, x: np.ndarray, positions: np.ndarray) -> np.ndarray:
        """x (T, d_qk) rotated at `positions` (T,) -> x before the rotation, float32."""
        x = x.astype(np.float32)          # a copy: the recorded array stays as it is
        d_rope = 2 * self.inv_freq.shape[0]
        angles = positions.astype(np.float32)[:, None] * self.inv_freq[None, :]       # (T, d_R/2)
        cos, sin = np.cos(angles), np.sin(angles)
        part = x[:, self.start: self.start + d_rope]
        if self.interleave:
            a, b = part[:, 0::2], part[:, 1::2]
        else:
            a, b = part[:, : d_rope // 2], part[:, d_rope // 2:]
        # The forward turn was (a, b) -> f (a cos - b sin, b cos + a sin); turning back divides by f.
        back_a, back_b = (a * cos + b * sin) / self.factor, (b * cos - a * sin) / self.factor
        if self.interleave:
            part[:, 0::2], part[:, 1::2] = back_a, back_b
        else:
            part[:, : d_rope // 2], part[:, d_rope // 2:] = back_a, back_b
        return x


@dataclass(frozen=True)
class Trace:
    """The whole recorded run: the model info plus one record per step.

    Immutable: the engine returns a new Trace after each step (sharing the old
    records), so a panel holding an old trace never sees it change.
    """

    model: ModelInfo
    steps: tuple[StepRecord, ...] = ()
    encoder: StepRecord | None = None     # the encoder pass of an encoder-decoder
    rope_inv_freq: np.ndarray | None = None  # (d_qk/2,) for the embeddings panel's angle plot
    rope: tuple[RopeAngles | None, ...] = ()  # per layer: how it rotated Q and K (None: no RoPE)
    _cache: dict = field(default_factory=dict, compare=False, repr=False)

    # ----- tokens -------------------------------------------------------
    @cached_property
    def token_ids(self) -> np.ndarray:
        """All input ids fed so far, in order: (T,)."""
        if not self.steps:
            return np.zeros(0, dtype=np.int64)
        return np.concatenate([s.token_ids for s in self.steps]).astype(np.int64)

    @cached_property
    def token_text(self) -> tuple[str, ...]:
        return tuple(t for s in self.steps for t in s.token_text)

    @property
    def n_tokens(self) -> int:
        return int(self.token_ids.shape[0])

    @property
    def n_steps(self) -> int:
        return len(self.steps)

    def candidates(self, position: int) -> tuple[np.ndarray, np.ndarray] | None:
        """The recorded next-token candidates after `position` (ids, probs), or None where they
        were not recorded (a prompt's earlier positions: Decoder.candidates_at computes those)."""
        step = self.steps[self.step_of_position(position)]
        if step.top_ids.shape[1] == 0:                  # an encoder predicts no next token: none at all
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        row = position - int(step.positions[0]) - (step.n_new - step.top_ids.shape[0])
        if row < 0:
            return None
        return step.top_ids[row], step.top_probs[row]

    def step_of_position(self, position: int) -> int:
        """Index of the step that fed the token at `position`."""
        offset = 0
        for index, step in enumerate(self.steps):
            offset += step.n_new
            if position < offset:
                return index
        raise IndexError(position)

    # ----- attention, assembled from per-step rows ------------------------
    def attention(self, layer: int, upto_step: int | None = None, cross: bool = False,
                  keep: bool = True) -> np.ndarray:
        """Dense attention weights of one layer: (N_Q, T_q, T_kv), zero where masked; `keep` False
        leaves them out of the trace's cache (an export going through every layer of a long trace)."""
        return self._assemble(layer, upto_step, cross, "weights", keep=keep)

    def attention_head(self, layer: int, head: int, upto_step: int | None = None, cross: bool = False) -> np.ndarray:
        """Dense attention weights of one head: (T_q, T_kv), zero where masked; `attention(...)[head]`
        without assembling the other heads (a new trace after every step assembles again)."""
        if ("weights", layer, self._last(upto_step), cross, None) in self._cache:
            return self.attention(layer, upto_step, cross)[head]
        return self._assemble(layer, upto_step, cross, "weights", head)

    def attention_row(self, layer: int, head: int, query: int, upto_step: int | None = None,
                      cross: bool = False) -> np.ndarray:
        """One query row of one head's dense weights: (T_kv,), `attention_head(...)[query]` computing
        only that row where the weights are on demand (a long prompt's hover, a token's row)."""
        recs = self._attn_records(layer, cross, upto_step)
        t_kv = max(int(r.kv_positions.max()) + 1 for r in recs) if not cross else recs[0].n_kv
        for r in recs:
            if query < r.n_new:
                out = np.zeros(t_kv, dtype=np.float32)
                out[r.kv_positions if not cross else np.arange(r.n_kv)] = r.weights_row(head, query)
                return out
            query -= r.n_new
        raise IndexError(query)

    def mask(self, layer: int, upto_step: int | None = None, cross: bool = False) -> np.ndarray:
        """Dense boolean mask of one layer: (T_q, T_kv), True where attention is allowed."""
        return self._assemble(layer, upto_step, cross, "mask")

    def scores(self, layer: int, head: int, upto_step: int | None = None, cross: bool = False) -> np.ndarray:
        """Pre-softmax scores S = Q K^T * scale of one head with the mask applied (-inf): (T_q, T_kv).

        Recomputed from the recorded Q and K, which is exact for what the model
        computed (the recorded Q and K are the ones it multiplied).
        """
        q = self.q(layer, head, upto_step, cross)               # (T_q, d_qk)
        k = self.k(layer, self.kv_head_of(head), upto_step, cross)  # (T_kv, d_qk)
        record = self._attn_records(layer, cross)[0]
        s = (q.astype(np.float32) @ k.astype(np.float32).T) * record.scale
        s = kernels.softcapped(s, record.softcap)                # c tanh(S / c) where the model caps
        m = self.mask(layer, upto_step, cross)
        return np.where(m, s, -np.inf).astype(np.float32)

    def q(self, layer: int, head: int, upto_step: int | None = None, cross: bool = False) -> np.ndarray:
        """Q_h for every query position so far: (T_q, d_qk)."""
        recs = self._attn_records(layer, cross, upto_step)
        return np.concatenate([r.q[head] for r in recs], axis=0)

    def k(self, layer: int, kv_head: int, upto_step: int | None = None, cross: bool = False) -> np.ndarray:
        """K of one K/V head for every key position so far: (T_kv, d_qk)."""
        recs = self._kv_records(layer, cross, upto_step)
        return np.concatenate([r.k[kv_head] for r in recs], axis=0)

    def v(self, layer: int, kv_head: int, upto_step: int | None = None, cross: bool = False) -> np.ndarray:
        """V of one K/V head for every key position so far: (T_kv, d_v)."""
        recs = self._kv_records(layer, cross, upto_step)
        return np.concatenate([r.v[kv_head] for r in recs], axis=0)

    def q_pre_rope(self, layer: int, head: int, upto_step: int | None = None) -> np.ndarray | None:
        """Q_h before RoPE for every query position so far: (T_q, d_qk); None without RoPE.

        Taken from the trace where it was recorded, else rotated back from the recorded Q.
        """
        return self._pre_rope(layer, "q_pre_rope", head, upto_step)

    def k_pre_rope(self, layer: int, kv_head: int, upto_step: int | None = None) -> np.ndarray | None:
        """K of one K/V head before RoPE for every key position so far: (T_kv, d_qk); None without RoPE."""
        return self._pre_rope(layer, "k_pre_rope", kv_head, upto_step)

    def has_pre_rope(self, layer: int) -> bool:
        """Whether Q and K of `layer` differ before RoPE (recorded or derivable)."""
        recorded = self.steps and self.steps[0].layers[layer].attn.q_pre_rope is not None
        return bool(recorded or (layer < len(self.rope) and self.rope[layer] is not None))

    def head_out(self, layer: int, head: int, upto_step: int | None = None, cross: bool = False) -> np.ndarray:
        """O_h for every query position so far, as the model went on with it: (T_q, d_v).

        Taken from the trace where it was recorded (every head's, or a head an intervention replaced:
        0 when ablated, its prompt mean, patched values), else O_h = A_h V_h from the recorded weights
        and values (compact recording leaves it out).
        """
        recs = self._attn_records(layer, cross, upto_step)
        recorded = [r.recorded_head_out(head) for r in recs]                # per record (n_new, d_v) or None
        if all(rows is not None for rows in recorded):
            return np.concatenate(recorded, axis=0)
        weights = self.attention_head(layer, head, upto_step, cross).astype(np.float32)  # (T_q, T_kv)
        values = self.v(layer, self.kv_head_of(head), upto_step, cross).astype(np.float32)  # (T_kv, d_v)
        out = weights[:, : values.shape[0]] @ values
        row = 0
        for r, rows in zip(recs, recorded):
            if rows is not None:
                out[row: row + r.n_new] = rows
            row += r.n_new
        return out

    def kv_head_of(self, head: int) -> int:
        """The K/V head that query head `head` reads (GQA grouping; MLA expands per head)."""
        group = max(1, self.model.n_heads // max(1, self.model.n_kv_heads))
        return head // group

    def query_heads_of(self, kv_head: int) -> list[int]:
        group = max(1, self.model.n_heads // max(1, self.model.n_kv_heads))
        return list(range(kv_head * group, (kv_head + 1) * group))

    # ----- KV cache ---------------------------------------------------------
    def kv_bytes_in_use(self, upto_step: int | None = None) -> np.ndarray:
        """Cache bytes in use per layer after the given step: (L,)."""
        step = self._step_slice(upto_step)[-1]
        return np.array([layer.kv_bytes_in_use for layer in step.layers], dtype=np.int64)

    def kv_bytes_allocated(self, upto_step: int | None = None) -> np.ndarray:
        step = self._step_slice(upto_step)[-1]
        return np.array([layer.kv_bytes_allocated for layer in step.layers], dtype=np.int64)

    def nbytes(self) -> int:
        """Memory held by the trace's arrays, the sum of its step records'."""
        return sum(step.nbytes for step in self.steps + ((self.encoder,) if self.encoder else ()))

    # ----- helpers ------------------------------------------------------------
    def _step_slice(self, upto_step: int | None) -> tuple[StepRecord, ...]:
        if not self.steps:
            raise ValueError("the trace has no steps yet")
        end = len(self.steps) if upto_step is None else upto_step + 1
        return self.steps[:end]

    def _attn_records(self, layer: int, cross: bool, upto_step: int | None = None) -> list[AttentionRecord]:
        steps = self._step_slice(upto_step)
        return [(s.layers[layer].cross if cross else s.layers[layer].attn) for s in steps]

    def _kv_records(self, layer: int, cross: bool, upto_step: int | None) -> list[AttentionRecord]:
        if cross:
            # Cross-attention K/V come once from the encoder output C.
            return [self.steps[0].layers[layer].cross]
        if self.encoder is not None and self.model.is_encoder_only:
            return [self.encoder.layers[layer].attn]
        return self._attn_records(layer, cross, upto_step)

    def _pre_rope(self, layer: int, field: str, head: int, upto_step: int | None) -> np.ndarray | None:
        recs = self._attn_records(layer, False, upto_step)
        if all(getattr(r, field) is not None for r in recs):
            return np.concatenate([getattr(r, field)[head] for r in recs], axis=0)
        angles = self.rope[layer] if layer < len(self.rope) else None
        if angles is None:
            return None
        rotated = self.q(layer, head, upto_step) if field == "q_pre_rope" else self.k(layer, head, upto_step)
        positions = np.concatenate([s.positions for s in self._step_slice(upto_step)])
        return angles.unrotate(rotated, positions)

    def _last(self, upto_step: int | None) -> int:
        return upto_step if upto_step is not None else len(self.steps) - 1

    def _assemble(self, layer: int, upto_step: int | None, cross: bool, what: str, head: int | None = None,
                  keep: bool = True) -> np.ndarray:
        """A layer's dense weights (all heads, or `head`'s) or mask, cached on the trace where `keep`."""
        key = (what, layer, self._last(upto_step), cross, head)
        if key in self._cache:
            return self._cache[key]
        recs = self._attn_records(layer, cross, upto_step)
        t_q = sum(r.n_new for r in recs)
        t_kv = max(int(r.kv_positions.max()) + 1 for r in recs) if not cross else recs[0].n_kv
        only = recs[0] if len(recs) == 1 and (cross or run_slice(recs[0].kv_positions) == slice(0, t_kv)) else None
        if only is not None and (only.on_demand if what == "weights" else isinstance(only.mask, MaskRule)):
            out = only.weights_of(head) if what == "weights" else np.asarray(only.mask)     # made here: no copy
            if keep:
                self._cache[key] = out
            return out
        if what == "weights":
            shape = (recs[0].n_heads, t_q, t_kv) if head is None else (t_q, t_kv)
            dtype = np.float32 if any(r.on_demand for r in recs) else recs[0].weights_packed.dtype
            out = np.zeros(shape, dtype=dtype)
        else:
            out = np.zeros((t_q, t_kv), dtype=bool)
        row = 0
        for r in recs:
            cols = r.kv_positions if not cross else np.arange(r.n_kv)
            run = run_slice(cols)
            cols = cols if run is None else run                         # keys in order: a plain copy
            rows = slice(row, row + r.n_new)
            if what == "weights":
                out[..., rows, cols] = r.weights_of(head)
            else:
                out[rows, cols] = np.asarray(r.mask)
            row += r.n_new
        if keep:
            self._cache[key] = out
        return out


def nbytes_of(obj, seen: set | None = None) -> int:
    """Bytes held by the arrays under `obj`, counting an array shared by several records once."""
    seen = set() if seen is None else seen
    if isinstance(obj, np.ndarray):
        if id(obj) in seen:
            return 0
        seen.add(id(obj))
        return int(obj.nbytes)
    if isinstance(obj, (tuple, list)):
        return sum(nbytes_of(o, seen) for o in obj)
    if hasattr(obj, "__dataclass_fields__"):
        return sum(nbytes_of(getattr(obj, f), seen) for f in obj.__dataclass_fields__ if not f.startswith("_"))
    return 0
