"""The projection weights of one attention head, as numpy, in the paper's orientation (rows = inputs).

For Q_h = X W_h^Q the matrix W_h^Q is (d_model, d_head); torch's Linear stores
its transpose, so each slice is transposed here. GQA/MQA heads read a K/V head
shared by a group of query heads (Ainslie et al. 2023), so W^K and W^V are
those of the shared head. MLA (DeepSeek-V2, section 2.1) has no per-head W^K:
keys and values are expanded from the latent c_KV = X W^{DKV} by W_h^{UK} and
W_h^{UV}, and the decoupled RoPE key comes from X W^{KR}, shared by all heads.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from explorer.core.errors import ExplorerError


@dataclass(frozen=True)
class HeadWeights:
    """Named matrices (name -> (rows, cols) float32) in display order, and how the head shares them."""

    layer: int
    head: int
    kind: str                          # "mha" | "gqa" | "mqa" | "mla"
    matrices: dict[str, np.ndarray]
    kv_head: int | None                # the K/V head it reads (None for MLA)
    shared_by: tuple[int, ...]         # the query heads reading the same K/V weights


def _numpy(weight: torch.Tensor) -> np.ndarray:
    return weight.detach().to("cpu", torch.float32).numpy().copy()


def _rows(linear, start: int, stop: int) -> np.ndarray:
    """Output rows start:stop of a Linear's weight, transposed to (d_in, stop - start)."""
    return _numpy(linear.weight[start:stop]).T


def attention_module(model, layer: int):
    """The self-attention module of decoder layer `layer` (Transformer, encoder or encoder-decoder)."""
    layers = getattr(model, "layers", None)
    if layers is None and hasattr(model, "decoder"):
        layers = getattr(model.decoder, "layers", None)
    if layers is None or not 0 <= layer < len(layers):
        raise ExplorerError(f"layer {layer} is not a layer of this model")
    block = layers[layer]
    module = getattr(block, "attn", None) or getattr(block, "self_attn", None)
    if module is None:
        raise ExplorerError(f"layer {layer} of this model has no self-attention weights to show")
    return module


def head_weights(loaded, layer: int, head: int) -> HeadWeights:
    """W_h^Q, W^K and W^V of query head `head` (or MLA's W_h^Q, W^{DKV}, W^{KR}, W_h^{UK}, W_h^{UV})."""
    info = loaded.info
    if not 0 <= head < info.n_heads:
        raise ExplorerError(f"head {head} is not one of the {info.n_heads} heads of {info.name}")
    module = attention_module(loaded.model, layer)
    with torch.inference_mode():
        if hasattr(module, "wkv_b"):
            return _latent(module, layer, head)
        return _dense(module, info, layer, head)


def _dense(module, info, layer: int, head: int) -> HeadWeights:
    d_qk, d_v = info.d_qk, info.d_v
    group = max(1, info.n_heads // max(1, info.n_kv_heads))
    g = head // group                                                   # the K/V head this query head reads
    matrices = {f"W_{head}^Q": _rows(module.wq, head * d_qk, (head + 1) * d_qk),     # (d_model, d_qk)
                f"W_{g}^K": _rows(module.wk, g * d_qk, (g + 1) * d_qk),               # (d_model, d_qk)
                f"W_{g}^V": _rows(module.wv, g * d_v, (g + 1) * d_v)}                 # (d_model, d_v)
    return HeadWeights(layer, head, info.attention, matrices, g, tuple(range(g * group, (g + 1) * group)))


def _latent(module, layer: int, head: int) -> HeadWeights:
    d_qk = module.d_nope + module.d_rope
    if hasattr(module, "wq_a"):
        queries = {"W^{DQ}": _numpy(module.wq_a.weight).T,                               # (d_model, r_q)
                   f"W_{head}^{{UQ}}": _rows(module.wq_b, head * d_qk, (head + 1) * d_qk)}  # (r_q, d_qk)
    else:
        queries = {f"W_{head}^Q": _rows(module.wq, head * d_qk, (head + 1) * d_qk)}     # (d_model, d_qk)
    w_uk, w_uv = module.up_projections()                                # (H, d_nope, d_c), (H, d_v, d_c)
    matrices = {**queries,
                "W^{DKV}": _rows(module.wkv_a, 0, module.d_c),                            # (d_model, d_c)
                "W^{KR}": _rows(module.wkv_a, module.d_c, module.d_c + module.d_rope),    # (d_model, d_R)
                f"W_{head}^{{UK}}": _numpy(w_uk[head]).T,                                  # (d_c, d_nope)
                f"W_{head}^{{UV}}": _numpy(w_uv[head]).T}                                  # (d_c, d_v)
    return HeadWeights(layer, head, "mla", matrices, None, tuple(range(module.n_heads)))
