"""A decoder-only transformer, chosen piece by piece from a ModelConfig.

    h_0 = E[ids] * embed_scale (+ P[positions])
    for each block:  X = Norm(h);  h = h + Attention(X);  h = h + FFN(Norm(h))
    logits = Norm(h) W_U

GPT-2, Llama/Mistral/Qwen, Gemma 3 and DeepSeek differ only in the tables
below (norm, activation, FFN, attention kind), never in copies of this file.
Shapes have no batch dimension: the explorer follows one sequence, (T, d).
"""
from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from explorer.core import kernel as kernels
from explorer.core import path_patching
from explorer.core.attention import SelfAttention, StepContext
from explorer.core.config import ModelConfig
from explorer.core.intervention_run import as_run
from explorer.core.mla import LatentAttention
from explorer.core.moe import GatedMLP, MoE
from explorer.core.rope import Rotary
from explorer.core.stacked import store_by_columns


def overflow_to_nan(inv_rms: torch.Tensor, mean_square: torch.Tensor) -> torch.Tensor:
    """A norm's 1/sqrt(mean square + eps), NaN exactly where the mean square overflowed float32 (a row whose
    numbers reach about 1.8e19/sqrt(d)); there 1/sqrt(inf) = 0 would map the row to zeros, finite and
    meaningless (transformers' norm does), and NaN reaches the forward pass's check (decode.refuse_non_finite)
    instead. inv_rms + 0 * mean_square in one fused op, 0 * inf = NaN: a masked fill costs three ops a norm."""
    return inv_rms.add(mean_square, alpha=0.0)


class RMSNorm(nn.Module):
    """RMSNorm(x) = w * x / sqrt(mean(x^2) + eps)  (Zhang & Sennrich 2019), computed in float32."""

    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def normalized(self, x: torch.Tensor) -> torch.Tensor:
        """x / sqrt(mean(x^2) + eps) in float32, in the ops transformers writes and one more (overflow_to_nan);
        F.rms_norm runs about twelve on the CPU, and a decoding step's one row pays for each of them."""
        x = x.float()
        mean_square = x.pow(2).mean(-1, keepdim=True)                                        # (T, 1)
        return x * overflow_to_nan(mean_square.add(self.eps).rsqrt_(), mean_square)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.weight * self.normalized(x).to(x.dtype)


class OffsetRMSNorm(RMSNorm):
    """Gemma's RMSNorm: x / rms(x) * (1 + w), with w stored zero-centred."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (self.normalized(x) * (1.0 + self.weight.float())).to(x.dtype)


class LayerNorm(nn.LayerNorm):
    """LayerNorm(x) = w * (x - mean) / sqrt(var + eps) + b  (Ba et al. 2016), as GPT-2, BERT and the
    encoder-decoder use; a row whose variance overflows float32 gives NaN, as RMSNorm's does (overflow_to_nan)."""

    def __init__(self, dim: int, eps: float = 1e-5):
        super().__init__(dim, eps=eps)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out, _, inv_std = torch.native_layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)
        return out.masked_fill(inv_std == 0, math.nan)       # inv_std (..., 1) is 0 only where var overflowed


def gelu_tanh(x: torch.Tensor) -> torch.Tensor:
    return F.gelu(x, approximate="tanh")


def gelu_new(x: torch.Tensor) -> torch.Tensor:
    """GPT-2's GELU, written out as in its original code."""
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


NORMS = {"rms": RMSNorm, "rms_offset": OffsetRMSNorm, "layer": LayerNorm}
ACTIVATIONS = {"silu": F.silu, "swish": F.silu, "gelu": F.gelu, "relu": F.relu, "gelu_new": gelu_new,
               "gelu_pytorch_tanh": gelu_tanh, "gelu_fast": gelu_tanh}


class MLP(nn.Module):
    """FFN(x) = act(x W_in + b_in) W_out + b_out  (GPT-2)."""

    def __init__(self, d_model: int, d_ff: int, activation, bias: bool = True):
        super().__init__()
        self.w_in = nn.Linear(d_model, d_ff, bias=bias)
        self.w_out = nn.Linear(d_ff, d_model, bias=bias)
        self.act = activation

    def fuse(self) -> None:
        store_by_columns(self.w_in)
        store_by_columns(self.w_out)

    def hidden(self, x: torch.Tensor) -> torch.Tensor:
        """act(x W_in + b_in): (T, d_ff), what W_out reads."""
        return self.act(self.w_in(x))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w_out(self.hidden(x))


def _feed_forward(config: ModelConfig, layer: int) -> nn.Module:
    activation = ACTIVATIONS[config.activation]
    if config.is_moe_layer(layer):
        return MoE(config, activation)
    if config.ffn == "mlp":
        return MLP(config.d_model, config.d_ff, activation, config.mlp_bias)
    return GatedMLP(config.d_model, config.d_ff, activation, config.mlp_bias)


class Block(nn.Module):
    """Pre-norm block: h += Attn(Norm(h)); h += FFN(Norm(h)). Gemma adds a norm after each sublayer."""

    def __init__(self, config: ModelConfig, layer: int):
        super().__init__()
        norm = NORMS[config.norm]
        self.layer = layer
        self.attn_norm = norm(config.d_model, config.norm_eps)
        self.attn = (LatentAttention if config.mla else SelfAttention)(config, layer, norm)
        self.ffn_norm = norm(config.d_model, config.norm_eps)
        self.ffn = _feed_forward(config, layer)
        self.post_attn_norm = norm(config.d_model, config.norm_eps) if config.sandwich_norm else None
        self.post_ffn_norm = norm(config.d_model, config.norm_eps) if config.sandwich_norm else None

    def forward(self, h: torch.Tensor, step: StepContext, cache=None, capture=None) -> torch.Tensor:
        # The sublayers' forward is called directly: nn.Module.__call__ only adds hook
        # bookkeeping (the engine has no hooks), a few us per call, 4 calls per layer.
        # The intervention, if any, travels in `step` (StepContext.run) to the attention core.
        if step.run is not None:
            h = step.run.patch_residual(h, self.layer, step)                     # activation patching
            if step.run.intervention.path_patches:
                path_patching.receive(self, h, step)                             # X' for a path's receiver head
        h_in = h
        x = self.attn_norm.forward(h)                                            # X: (T, d_model)
        a = self.attn.forward(x, step, cache, capture)
        if self.post_attn_norm is not None:
            a = self.post_attn_norm(a)
        if step.run is not None:
            a = step.run.patch_sublayer(a, self.layer, "attn_out", step)
        h = h + a
        f = self.ffn.forward(self.ffn_norm.forward(h))
        if self.post_ffn_norm is not None:
            f = self.post_ffn_norm(f)
        if step.run is not None:
            f = step.run.patch_sublayer(f, self.layer, "mlp_out", step)
        h = h + f                                                                # (T, d_model)
        if capture is not None:
            capture.block(self.layer, x=x, residual_in=h_in, attn_out=a, ffn_out=f, residual=h)
        return h


class Transformer(nn.Module):
    """Embeddings, a stack of blocks, the final norm and the unembedding W_U."""

    def __init__(self, config: ModelConfig):
        super().__init__()
        self.config = config
        self.embed = nn.Embedding(config.vocab_size, config.d_model)             # E
        self.pos = nn.Embedding(config.max_positions, config.d_model) if config.positional == "learned" else None
        self.layers = nn.ModuleList(Block(config, i) for i in range(config.n_layers))
        self.norm = NORMS[config.norm](config.d_model, config.norm_eps)
        self.lm_head = nn.Linear(config.d_model, config.vocab_size, bias=False)  # W_U
        self.rotaries = self._rotaries(config)

    @staticmethod
    def _rotaries(config: ModelConfig) -> dict[str, Rotary]:
        if config.positional != "rope":
            return {}
        tables = {"global": Rotary(config.rope, config.d_head, config.rope_interleave)}
        if config.rope_local is not None:
            tables["local"] = Rotary(config.rope_local, config.d_head, config.rope_interleave)
        return tables

    def embed_tokens(self, ids: torch.Tensor, step: StepContext) -> torch.Tensor:
        h = self.embed(ids)                                                      # E[ids]: (T, d_model)
        if self.config.embed_scale != 1.0:
            h = h * torch.tensor(self.config.embed_scale, dtype=h.dtype)
        if self.pos is not None:
            h = h + self.pos(step.positions)                                     # + P[positions]
        return h

    def forward(self, ids: torch.Tensor, positions: np.ndarray, cache=None, capture=None,
                intervention=None) -> torch.Tensor:
        """Final-normed hidden states (T, d_model) of the new tokens; `cache` holds earlier ones.

        `intervention`: an intervention.Intervention, or the intervention_run.InterventionRun of a
        decoder that keeps its prompt means across steps; None runs the model as it is.
        """
        step = self.step_context(positions, intervention)
        h = self.embed_tokens(ids, step)
        return self.norm(self.run_blocks(h, step, cache, capture))

    def step_context(self, positions: np.ndarray, intervention=None,
                     sequences: np.ndarray | None = None) -> StepContext:
        """What the blocks of one pass share; `sequences` (T,) packs several sequences into one pass
        (positions restart in each; a query sees only keys of its own sequence)."""
        weight = self.embed.weight
        return StepContext(positions, weight.device, weight.dtype, self.rotaries, as_run(intervention), sequences)

    def run_blocks(self, h: torch.Tensor, step: StepContext, cache=None, capture=None, start: int = 0) -> torch.Tensor:
        """The residual stream h (T, d_model) through blocks start.. (not the final norm)."""
        caches = [None] * len(self.layers) if cache is None else cache.layers
        for block, layer_cache in zip(self.layers[start:], caches[start:]):
            h = block.forward(h, step, layer_cache, capture)                     # (hooks: see Block.forward)
        return h

    def fuse(self) -> "Transformer":
        """Stack each layer's [W^Q; W^K; W^V] and [W_gate; W_up] so each is one matmul, and store float32
        weights by columns (stacked.by_columns): the same numbers, faster products.

        For a built model whose weights no longer change; training keeps the separate matmuls.
        """
        for module in self.modules():
            if module is not self and hasattr(module, "fuse"):
                module.fuse()
        tied = self.lm_head.weight is self.embed.weight
        store_by_columns(self.lm_head)                                       # W_U, read whole every step
        if tied:
            self.embed.weight = self.lm_head.weight                          # E stays W_U's own numbers
        return self

    def logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """logits = h W_U (T, V); Gemma caps them with c * tanh(logits / c) (kernel.softcapped)."""
        return kernels.softcapped(self.lm_head(hidden), self.config.final_softcap)
