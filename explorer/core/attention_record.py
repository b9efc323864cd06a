"""One attention sublayer's record at one step, and the on-demand maps it rebuilds. Imports numpy only.

A record keeps Q, K and V of its new tokens; its weights A = softmax(S), S = Q_h K_h^T * scale
(+ mask), are stored packed (only the entries the mask allows) or rebuilt from Q and K when a
view asks (attention_maps), and the maps asked for last are KEPT across every record.
Re-exported by explorer.core.trace, where the rest of the trace lives.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from explorer.core import attention_maps
from explorer.core import kernel as kernels
from explorer.core.attention_maps import MaskRule
from explorer.core.intervention import SOFTMAX, Kernel


@dataclass(frozen=True)
class AttentionRecord:
    """One attention sublayer at one step: the new query rows against the cache.

    n_new is the number of query tokens this step (prompt length at prefill, 1
    when decoding); n_kv is the number of key positions visible in the cache.
    A record whose own keys are all the keys it attends (a prefill, an encoder pass,
    cross-attention to the encoder) may leave its weights out (`weights_packed` None):
    they are rebuilt on demand from Q and K by the model's operations (attention_maps),
    one head or one row at a time, and the last maps asked for are KEPT. Stored weights
    are packed: only the entries the mask allows (a causal prefill's triangle, not its
    square); `weights` gives them dense. The mask may be kept as its rule (MaskRule).
    """

    q: np.ndarray                 # (N_Q, n_new, d_qk)   after RoPE
    k: np.ndarray                 # (N_KV, n_new, d_qk)  keys of the new tokens, after RoPE
    v: np.ndarray                 # (N_KV, n_new, d_v)   values of the new tokens
    weights_packed: np.ndarray | None  # (N_Q, n_allowed) A = softmax(S) at mask's True entries; None: on demand
    mask: np.ndarray | MaskRule   # (n_new, n_kv) bool   True where query may attend key
    kv_positions: np.ndarray      # (n_kv,) int          absolute position of each key column
    scale: float                  # the factor in S = Q K^T * scale
    q_pre_rope: np.ndarray | None = None   # (N_Q, n_new, d_qk) where RoPE changes Q
    k_pre_rope: np.ndarray | None = None   # (N_KV, n_new, d_qk)
    head_out: np.ndarray | None = None     # (N_Q, n_new, d_v)  O_h = A V_h
    latent: np.ndarray | None = None       # (n_new, d_c)  MLA's c_KV, what its cache holds
    k_rope: np.ndarray | None = None       # (n_new, d_R)  MLA's decoupled RoPE key
    softcap: float | None = None           # tanh soft-capping of scores, where the model has it
    kernel: Kernel = SOFTMAX               # f_kappa of A = Z^-1 f(S) (intervention.Kernel; exp: the model's own)
    edited_heads: tuple[int, ...] = ()     # heads whose O_h an intervention replaced (ablated, kept out, patched)
    edited_out: np.ndarray | None = None   # (n_edited, n_new, d_v) their O_h as the model went on with it

    @property
    def weights(self) -> np.ndarray:
        """A = softmax(S) as (N_Q, n_new, n_kv), exactly 0 where masked (unpacked, not cached)."""
        return self.weights_of()

    def weights_of(self, head: int | None = None) -> np.ndarray:
        """`weights`, or one head's (n_new, n_kv) without unpacking or computing the others."""
        if self.weights_packed is None:
            return self._map(head) if head is not None else np.stack([self._map(h) for h in range(self.n_heads)])
        packed_rows = self.weights_packed if head is None else self.weights_packed[head]
        if self.weights_packed.shape[1] == self.mask.size:                  # nothing masked
            return packed_rows.reshape(*packed_rows.shape[:-1], *self.mask.shape)
        dense = np.zeros((*packed_rows.shape[:-1], *self.mask.shape), dtype=self.weights_packed.dtype)
        dense[..., np.asarray(self.mask)] = packed_rows
        return dense

    def weights_row(self, head: int, row: int) -> np.ndarray:
        """One query row of one head's A: (n_kv,), computed alone where the weights are on demand."""
        if self.weights_packed is not None or KEPT.get(self, head) is not None:
            return self.weights_of(head)[row]
        return attention_maps.weights(self.q[head], self.k[self.kv_head_of(head)], self.mask, self.scale,
                                      self.softcap, self.kernel, rows=slice(row, row + 1))[0]

    def recorded_head_out(self, head: int) -> np.ndarray | None:
        """O_h of this record's rows (n_new, d_v) where the record holds it: every head's when head outputs
        are recorded, or a head an intervention replaced (its O_h is not A_h V_h); else None."""
        if self.head_out is not None:
            return self.head_out[head]
        if head in self.edited_heads:
            return self.edited_out[self.edited_heads.index(head)]
        return None

    @property
    def weight_softcap(self) -> float | None:
        """The soft-cap of the scores A is formed from under this record's kernel (kernel.kernel_softcap)."""
        return kernels.kernel_softcap(self.softcap, self.kernel)

    @property
    def on_demand(self) -> bool:
        """Whether the weights are rebuilt from Q and K rather than stored."""
        return self.weights_packed is None

    def kv_head_of(self, head: int) -> int:
        """The K/V head query head `head` reads in this record (GQA: N_Q / N_KV heads share one)."""
        return head // max(1, self.q.shape[0] // self.k.shape[0])

    def _map(self, head: int) -> np.ndarray:
        """A_h rebuilt from Q_h and its K by the model's operations (the last ones asked for are KEPT)."""
        kept = KEPT.get(self, head)
        if kept is not None:
            return kept
        if self.k.shape[1] != self.n_kv:
            raise ValueError("this record's keys are not all it attends: its weights must be stored")
        return KEPT.put(self, head, attention_maps.weights(self.q[head], self.k[self.kv_head_of(head)], self.mask,
                                                           self.scale, self.softcap, self.kernel))

    @property
    def n_heads(self) -> int:
        return int(self.q.shape[0] if self.weights_packed is None else self.weights_packed.shape[0])

    @property
    def n_new(self) -> int:
        return int(self.mask.shape[0])

    @property
    def n_kv(self) -> int:
        return int(self.mask.shape[1])


KEPT = attention_maps.KeptMaps(1 << 30)   # on-demand maps of every trace: 1 GiB, four heads at 8,000 tokens


def run_slice(indices: np.ndarray) -> slice | None:
    """The slice that picks `indices` when they are one increasing run of integers, else None."""
    if indices.size and int(indices[-1]) - int(indices[0]) == indices.size - 1 and \
            (indices.size < 3 or bool(np.all(np.diff(indices) == 1))):
        return slice(int(indices[0]), int(indices[-1]) + 1)
    return None


def packed(weights: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Dense weights (N_Q, n_new, n_kv) as AttentionRecord stores them: (N_Q, n_allowed)."""
    return weights[:, mask]
