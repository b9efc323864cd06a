"""Scoped capture of one forward pass: the model hands its intermediates to this object.

No hooks, no global state: the decoder creates one StepCapture per step, passes it
down the forward call, turns what it holds into trace records (recording.py), and
drops it. The fields are typed: `capture.layers[l].attn.weights  # (head, q, k)`.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import torch

from explorer.core.attention_maps import MaskRule
from explorer.core.intervention import SOFTMAX, Kernel


@dataclass
class AttentionCapture:
    """One attention sublayer's tensors in one pass; the fields of trace.AttentionRecord, as torch."""

    q: torch.Tensor                        # (N_Q, T, d_qk) after RoPE
    k: torch.Tensor                        # (N_KV, T, d_qk) keys of the new tokens
    v: torch.Tensor                        # (N_KV, T, d_v)
    weights: torch.Tensor                  # (N_Q, T, n_kv) A, exactly 0 where masked
    head_out: torch.Tensor                 # (N_Q, T, d_v) O_h = A_h V_h (after any intervention on it)
    mask: np.ndarray                       # (T, n_kv) bool, True where the query sees the key
    kv_positions: np.ndarray               # (n_kv,)
    scale: float
    softcap: float | None = None
    q_pre_rope: torch.Tensor | None = None
    k_pre_rope: torch.Tensor | None = None
    latent: torch.Tensor | None = None     # MLA: c_KV of the new tokens (T, d_c)
    k_rope: torch.Tensor | None = None     # MLA: k_R (T, d_R)
    kernel: Kernel = SOFTMAX               # f_kappa the weights were computed with
    edited_heads: tuple[int, ...] = ()     # heads whose O_h an intervention replaced (recording.mark_edited)
    edited_out: torch.Tensor | None = None  # (n_edited, T, d_v) their O_h as the model went on with it
    rule: MaskRule | None = None           # the rule `mask` was made by (StepContext.mask); None: edited or not one
    prompts: tuple | None = None           # a packed pass: each prompt's fused_attention.PromptAttention (its A,
                                           # mask and rule); `weights` and `mask` then None in runs of squares


@dataclass
class LayerCapture:
    """One block in one pass: h_in -> h_in + attn_out -> ... + ffn_out = residual (pre-norm models).

    For post-LN blocks (BERT, the encoder-decoder) attn_out and ffn_out are the sublayer outputs
    before their Add & Norm, and `residual` is the block's output.
    """

    x: torch.Tensor | None = None              # (T, d) the attention sublayer's input X
    residual_in: torch.Tensor | None = None    # (T, d) h entering the block
    attn: AttentionCapture | None = None
    attn_out: torch.Tensor | None = None       # (T, d) attention output added to the residual (post-norm applied)
    cross: AttentionCapture | None = None      # encoder-decoder cross-attention
    cross_out: torch.Tensor | None = None      # (T, d)
    ffn_out: torch.Tensor | None = None        # (T, d) FFN output added to the residual (post-norm applied)
    residual: torch.Tensor | None = None       # (T, d) h leaving the block
    residual_norm: torch.Tensor | None = None  # (T,) ||h||, where a recording kept only the norm of `residual`


class StepCapture:
    """Per layer, what one forward pass produced."""

    def __init__(self, n_layers: int, weights: bool = True):
        self.layers: list[LayerCapture] = [LayerCapture() for _ in range(n_layers)]
        self.weights = weights      # False: nobody records A (the trace rebuilds it), so a fused kernel may run

    def attention(self, layer: int, record: AttentionCapture, cross: bool = False) -> None:
        if cross:
            self.layers[layer].cross = record
        else:
            self.layers[layer].attn = record

    def block(self, layer: int, **tensors) -> None:
        """The block-level tensors of `layer` (LayerCapture's fields)."""
        captured = self.layers[layer]
        for name, value in tensors.items():
            setattr(captured, name, value)

    def attention_of_batch(self, layer: int, record: AttentionCapture, cross: bool = False) -> None:
        """A batch's record, its tensors (B, heads, T, ...) (encdec.py keeps B): one run's capture takes row 0."""
        self.attention(layer, replace(record, **{name: getattr(record, name)[0] for name in BATCHED
                                                 if getattr(record, name) is not None}), cross)

    def block_of_batch(self, layer: int, **tensors) -> None:
        """A batch's block tensors (B, T, d): one run's capture takes row 0."""
        self.block(layer, **{name: value[0] for name, value in tensors.items()})


BATCHED = ("q", "k", "v", "weights", "head_out")     # an AttentionCapture's tensors with a batch dimension first


class PaddedCapture(StepCapture):
    """The capture of a right-padded batch (B, S): row b's tensors, cut to its own n_b tokens, go to its own
    capture with the mask and rule its pass alone makes (`own(n)`: that pass's Visibility). Padding keys get
    weight exactly 0 and padding rows are cut away, so each capture holds what its prompt's pass holds."""

    def __init__(self, captures: list[StepCapture], lengths: list[int], own):
        super().__init__(0, weights=any(capture.weights for capture in captures))
        self.captures, self.lengths, self.own = captures, lengths, own

    def attention_of_batch(self, layer: int, record: AttentionCapture, cross: bool = False) -> None:
        for row, (capture, n) in enumerate(zip(self.captures, self.lengths)):
            seen = self.own(n)
            cut = {name: getattr(record, name)[row, :, :n] for name in ("q", "k", "v", "head_out")}
            weights = None if record.weights is None else record.weights[row, :, :n, :n].contiguous()  # (H, n, n)
            same = np.array_equal(record.mask[:n, :n], seen.mask)              # else an intervention hid entries
            capture.attention(layer, replace(record, **cut, weights=weights, mask=seen.mask if same else
                                             record.mask[:n, :n], kv_positions=seen.keys,
                                             rule=seen.rule if same else None), cross)

    def block_of_batch(self, layer: int, **tensors) -> None:
        for row, (capture, n) in enumerate(zip(self.captures, self.lengths)):
            capture.block(layer, **{name: value[row, :n] for name, value in tensors.items()})
