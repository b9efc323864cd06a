"""Show the work for a block: one position through one pre-norm block, every step recomputed.

    h -> X = Norm(h)               RMSNorm: X = w h / rms(h), rms = sqrt(mean(h^2) + eps)
                                   LayerNorm: X = w (h - mu) / sqrt(var + eps) + b
      -> a = Attention(X)          (Gemma: a = Norm(a), its sandwich norm)
      -> h' = h + a
      -> f = FFN(Norm(h'))         gated: W_down (act(x W_gate) * x W_up);  MLP: W_out act(x W_in + b)
                                   MoE: sum_{e in top-k} g_e FFN_e(x) + shared experts
      -> h'' = h' + f

Each figure is recomputed in float64 from the captured tensors and the layer's weights, and `deltas`
gives its max |recomputed - captured|. The neurons shown are those writing most to the stream:
the largest |hidden_n| ||W_down[:, n]||.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from explorer.core.attribution import check_request, freeze, row_at
from explorer.core.errors import ExplorerError
from explorer.core.model import MLP, LayerNorm
from explorer.core.moe import GatedMLP, MoE


@dataclass(frozen=True)
class NormStep:
    """One norm applied to one vector: its statistics and its output."""

    kind: str                    # "RMSNorm" | "OffsetRMSNorm" | "LayerNorm"
    eps: float
    scale: float                 # rms(h), or sigma(h) for LayerNorm
    mean: float | None           # mu (LayerNorm only)
    variance: float | None       # var (LayerNorm only)
    output: np.ndarray           # (d,) float64


@dataclass(frozen=True)
class Neuron:
    index: int
    gate: float | None           # x W_gate (gated FFNs)
    up: float                    # x W_up, or x W_in + b for an MLP
    hidden: float                # act(gate) * up, or act(x W_in + b)
    write: float                 # |hidden| ||W_down[:, n]||


@dataclass(frozen=True)
class BlockWalk:
    layer: int
    position: int
    h_in: np.ndarray             # (d,)
    attn_norm: NormStep
    attn_out: np.ndarray         # (d,) a, as added (sandwich norm applied)
    h_mid: np.ndarray            # (d,) h' = h + a
    ffn_norm: NormStep
    ffn_out: np.ndarray          # (d,) f, as added
    h_out: np.ndarray            # (d,) h'' = h' + f
    neurons: tuple[Neuron, ...] = ()                    # dense FFNs: the top writers
    experts: tuple[tuple[int, float], ...] = ()         # MoE: the chosen experts and their weights g_e
    deltas: dict[str, float] = field(default_factory=dict)

    @property
    def max_delta(self) -> float:
        return max(self.deltas.values()) if self.deltas else 0.0


def _norm_step(norm, h: torch.Tensor) -> NormStep:
    """The norm's statistics at h (d,), and its output through the frozen form g * centre(h) + b."""
    frozen = freeze(norm, h)
    h = h.double()
    output = frozen.gain * (h - h.mean() if frozen.centred else h) + (frozen.bias if frozen.bias is not None else 0)
    if isinstance(norm, LayerNorm):
        mean, variance = float(h.mean()), float(((h - h.mean()) ** 2).mean())
        scale = float(np.sqrt(variance + norm.eps))
    else:
        mean = variance = None
        scale = float(torch.sqrt((h * h).mean() + norm.eps))
    return NormStep(kind=type(norm).__name__, eps=float(norm.eps), scale=scale, mean=mean, variance=variance,
                    output=output.cpu().numpy())


def _neurons(ffn, x: torch.Tensor, top: int) -> tuple[tuple[Neuron, ...], torch.Tensor]:
    """The FFN's hidden units at x (d,), the `top` largest writers, and FFN(x) recomputed from all of them."""
    x = x.double()
    if isinstance(ffn, GatedMLP):
        gate, up = ffn.w_gate.weight.double() @ x, ffn.w_up.weight.double() @ x
        hidden = ffn.act(gate) * up
        w_down, b_down = ffn.w_down.weight.double(), ffn.w_down.bias
    else:
        gate, up = None, ffn.w_in.weight.double() @ x + (ffn.w_in.bias.double() if ffn.w_in.bias is not None else 0)
        hidden = ffn.act(up)
        w_down, b_down = ffn.w_out.weight.double(), ffn.w_out.bias
    write = hidden.abs() * torch.linalg.vector_norm(w_down, dim=0)             # (d_ff,)
    order = torch.argsort(write, descending=True)[:top].tolist()
    neurons = tuple(Neuron(index=n, gate=None if gate is None else float(gate[n]), up=float(up[n]),
                           hidden=float(hidden[n]), write=float(write[n])) for n in order)
    return neurons, w_down @ hidden + (b_down.double() if b_down is not None else 0)


def _ffn_parts(ffn, x: torch.Tensor, top: int):
    """(top neurons, chosen experts, FFN(x) recomputed (d,) float64) for a dense FFN or a MoE."""
    if isinstance(ffn, MoE):
        dtype = ffn.router.weight.dtype
        weights, index = ffn.router(x[None].to(dtype))                           # (1, k) each
        experts = tuple(sorted(((int(e), float(g)) for e, g in zip(index[0], weights[0])), key=lambda p: -p[1]))
        return (), experts, ffn(x[None].to(dtype))[0].double()
    assert isinstance(ffn, (GatedMLP, MLP)), type(ffn)
    neurons, raw = _neurons(ffn, x, top)
    return neurons, (), raw


def walk_block(loaded, ids, layer: int, position: int | None = None, top: int = 8, decoder=None) -> BlockWalk:
    """Follow `position` through block `layer`: norms with their statistics, sublayers, adds, FFN neurons;
    its row is read through `decoder`'s KV cache where it ran these ids (attribution.row_at)."""
    ids = np.asarray(ids, dtype=np.int64).reshape(-1)
    position = check_request(loaded, ids, position, None)
    if not 0 <= layer < loaded.config.n_layers:
        raise ExplorerError(f"layer {layer} is not one of the {loaded.config.n_layers} layers of {loaded.name}")
    block = loaded.model.layers[layer]
    capture = row_at(loaded, ids, position, decoder)
    with torch.inference_mode():
        got = capture.layers[layer]
        h_in, a, f, h_out = (t[-1].double() for t in (got.residual_in, got.attn_out, got.ffn_out, got.residual))
        attn_norm, ffn_norm = _norm_step(block.attn_norm, got.residual_in[-1]), _norm_step(block.ffn_norm, h_in + a)
        deltas = {"X = Norm(h)": float(np.abs(attn_norm.output - got.x[-1].double().cpu().numpy()).max()),
                  "h'' = h + a + f": float((h_in + a + f - h_out).abs().max())}
        x2 = torch.from_numpy(ffn_norm.output).to(h_in.device)
        neurons, experts, raw = _ffn_parts(block.ffn, x2, top)
        recomputed = raw if block.post_ffn_norm is None else torch.from_numpy(
            _norm_step(block.post_ffn_norm, raw).output).to(raw.device)
        deltas["f = FFN(Norm(h'))"] = float((recomputed - f).abs().max())
    as_np = lambda t: t.cpu().numpy()                                          # noqa: E731
    return BlockWalk(layer=layer, position=position, h_in=as_np(h_in), attn_norm=attn_norm, attn_out=as_np(a),
                     h_mid=as_np(h_in + a), ffn_norm=ffn_norm, ffn_out=as_np(f), h_out=as_np(h_out),
                     neurons=neurons, experts=experts, deltas=deltas)
