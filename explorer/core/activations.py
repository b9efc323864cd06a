"""Activations by name: the residual stream and every sublayer's output of one run, on demand.

The trace keeps what the model keeps (Q, K, V and ||h||; X only beside stored maps), not the residual
vectors. These are computed when asked by one pass over the run's ids under the run's own intervention (a decoder's
InterventionRun keeps its prompt means, so the pass equals the cached decode), through the blocks
up to the deepest layer asked, keeping only what was asked, as float32 numpy:

    resid_pre = h_{l-1},  attn_in = X = Norm(h_{l-1}) (the attention's input),  attn_out = a_l,
    resid_mid = h_{l-1} + a_l,  mlp_out = f_l,
    resid_post = h_l = resid_mid + f_l,  mlp_post = act(x W_in) (gated: act(x W_gate) * x W_up),
    scale_attn / scale_mlp = rms(x) = sqrt(mean(x^2) + eps) (LayerNorm: sqrt(var(x) + eps)), the norm's divisor,
    q, k, v (T, heads, d) before RoPE; rot_q, rot_k after it; z = O_h (T, N_Q, d_v).
"""
from __future__ import annotations

import numpy as np
import torch

from explorer.core.capture import StepCapture
from explorer.core.errors import ExplorerError
from explorer.core.model import LayerNorm

BLOCK_NAMES = ("resid_pre", "attn_in", "resid_mid", "resid_post", "attn_out", "mlp_out", "mlp_post",
               "scale_attn", "scale_mlp")
HEAD_NAMES = ("q", "k", "v", "rot_q", "rot_k", "z")
RESIDUAL_NAMES = ("resid_pre", "resid_mid", "resid_post", "attn_out", "mlp_out", "scale_attn", "scale_mlp")
NAMES = BLOCK_NAMES + HEAD_NAMES


def norm_divisor(norm, x: torch.Tensor) -> torch.Tensor:
    """The divisor of a norm at each row of x (T, d): sqrt(mean(x^2) + eps), or sqrt(var(x) + eps) for LayerNorm."""
    x = x.float()
    if isinstance(norm, LayerNorm):
        centred = x - x.mean(-1, keepdim=True)
        return torch.sqrt((centred * centred).mean(-1) + norm.eps)
    return torch.sqrt((x * x).mean(-1) + norm.eps)


def _numpy(tensor: torch.Tensor) -> np.ndarray:
    return tensor.detach().to("cpu", torch.float32).numpy().copy()


class ActivationCapture(StepCapture):
    """A capture that keeps, of each block, only the asked names, converted to numpy as the block ends."""

    def __init__(self, model, wanted: dict[int, set[str]]):
        super().__init__(len(model.layers), weights=False)
        self.model, self.wanted = model, wanted
        self.kept: dict[tuple[int, str], np.ndarray] = {}

    def block(self, layer: int, **tensors) -> None:
        names = self.wanted.get(layer, set())
        attn = self.layers[layer].attn
        self.layers[layer].attn = None                                          # nothing outlives the block
        if not names:
            return
        block = self.model.layers[layer]
        h_in, a, f, h = tensors["residual_in"], tensors["attn_out"], tensors["ffn_out"], tensors["residual"]
        values = {"resid_pre": lambda: h_in, "attn_in": lambda: tensors["x"],
                  "resid_mid": lambda: h_in + a, "resid_post": lambda: h,
                  "attn_out": lambda: a, "mlp_out": lambda: f,
                  "mlp_post": lambda: _ffn_hidden(block, layer, h_in + a),
                  "scale_attn": lambda: norm_divisor(block.attn_norm, h_in),
                  "scale_mlp": lambda: norm_divisor(block.ffn_norm, h_in + a)}
        for name in names:
            if name in values:
                self.kept[layer, name] = _numpy(values[name]())
            else:
                self.kept[layer, name] = _head_tensor(attn, name, layer)


def _ffn_hidden(block, layer: int, h_mid: torch.Tensor) -> torch.Tensor:
    if not hasattr(block.ffn, "hidden"):
        raise ExplorerError(f"layer {layer}'s FFN is a mixture of experts: it has no single (T, d_ff) hidden layer")
    return block.ffn.hidden(block.ffn_norm.forward(h_mid))


def _head_tensor(attn, name: str, layer: int) -> np.ndarray:
    """Q, K, V (before RoPE), rotated Q, K, or O_h of one layer as (T, heads, d)."""
    field = {"q": "q_pre_rope", "k": "k_pre_rope", "v": "v", "rot_q": "q", "rot_k": "k", "z": "head_out"}[name]
    value = getattr(attn, field, None)
    if value is None and name in ("q", "k"):                                   # no RoPE: nothing rotated
        value = getattr(attn, name)
    if value is None:
        raise ExplorerError(f"layer {layer} has no {name} to give for this model")
    return _numpy(value.transpose(0, 1))                                        # (heads, T, d) -> (T, heads, d)


def compute(loaded, ids: np.ndarray, wanted: dict[int, set[str]], intervention_run=None) -> dict:
    """{(layer, name): array} for the asked names of each layer, from one pass over `ids` through
    the blocks up to the deepest asked layer; "scale_final" (layer -1) is the final norm's divisor."""
    model = loaded.model
    final = -1 in wanted
    blocks = {layer: names for layer, names in wanted.items() if layer >= 0}
    last = len(model.layers) - 1 if final else max(blocks, default=-1)
    capture = ActivationCapture(model, blocks)
    positions = np.arange(len(ids), dtype=np.int64)
    with torch.inference_mode():
        step = model.step_context(positions, intervention_run)
        h = model.embed_tokens(torch.as_tensor(ids, device=model.embed.weight.device), step)
        for block in model.layers[: last + 1]:
            h = block.forward(h, step, None, capture)
        if final:
            capture.kept[-1, "scale_final"] = _numpy(norm_divisor(model.norm, h))
    return capture.kept
