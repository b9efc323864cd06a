"""The encoder-decoder Transformer of "Attention Is All You Need" (Vaswani et al. 2017), written like the paper.

    h_0 = E[ids] * sqrt(d_model) + PE[positions]             (sinusoidal PE, section 3.5)
    encoder block:  h = LN(h + SelfAttn(h))                  (full mask: every source token sees all)
                    h = LN(h + FFN(h))                        -> C, the encoder output
    decoder block:  h = LN(h + MaskedSelfAttn(h))            (causal mask over the target so far)
                    h = LN(h + CrossAttn(X^Q = h, X^K = X^V = C))
                    h = LN(h + FFN(h))
    logits = h E^T                                             (embeddings shared with the softmax, 3.4)

Add & Norm is post-LN, as in the paper; FFN(x) = ReLU(x W_1 + b_1) W_2 + b_2.
The cross-attention K = C W^K and V = C W^V are computed once per source
(`cross_keys_values`) and reused at every decoding step.

Unlike model.py this module keeps a batch dimension B, because the same code
trains the bundled translation model on padded batches; the explorer runs B = 1, and an encoder-only
batch of prompts (encoder.prefill_padded) runs B rows whose capture cuts each row to its own length.
The attention core (mask, softmax, interventions) is model.py's: attention.attend
works on any leading dimensions.
The config.json format is our own: `model_type: "explorer-encdec"` (see EncDecConfig).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn

from explorer.core.attention import attend
from explorer.core.attention_maps import MaskRule
from explorer.core.building import SkipParameterInit, load_built, resolve_device, torch_dtype
from explorer.core.capture import AttentionCapture
from explorer.core.encdec_config import MODEL_TYPE, EncDecConfig
from explorer.core.errors import ModelLoadError
from explorer.core.families import FAMILIES
from explorer.core.intervention import SOFTMAX
from explorer.core.intervention_run import as_run
from explorer.core.model import ACTIVATIONS, MLP, LayerNorm
from explorer.core.trace import ModelInfo
from explorer.core.visibility import Visibility
from explorer.core.weights import validate


def sinusoidal(positions: torch.Tensor, d_model: int, dtype=torch.float32) -> torch.Tensor:
    """PE(pos, 2i) = sin(pos / 10000^(2i/d)),  PE(pos, 2i+1) = cos(pos / 10000^(2i/d)):  (T, d_model)."""
    i = torch.arange(0, d_model, 2, dtype=torch.float32, device=positions.device)  # 2i
    angles = positions.float()[:, None] / torch.pow(10000.0, i / d_model)[None, :]  # (T, d/2)
    pe = torch.stack((torch.sin(angles), torch.cos(angles)), dim=-1)            # (T, d/2, 2)
    return pe.reshape(len(positions), d_model).to(dtype)                        # interleaved sin, cos


class MultiHeadAttention(nn.Module):
    """MultiHead(X^Q, X^K, X^V) = concat_h(softmax(Q_h K_h^T / sqrt(d_k)) V_h) W^O, Q = X^Q W^Q, ...

    The softmax, the mask and every intervention are those of the shared core (attention.attend).
    """

    def __init__(self, d_model: int, n_heads: int, layer: int = 0, where: str = "self"):
        super().__init__()
        self.layer, self.where = layer, where            # which sublayer an Intervention names
        self.n_heads, self.d_head = n_heads, d_model // n_heads
        self.scale = self.d_head ** -0.5
        self.wq = nn.Linear(d_model, d_model)                                    # W^Q
        self.wk = nn.Linear(d_model, d_model)                                    # W^K
        self.wv = nn.Linear(d_model, d_model)                                    # W^V
        self.wo = nn.Linear(d_model, d_model)                                    # W^O

    def _heads(self, x: torch.Tensor, projection: nn.Linear) -> torch.Tensor:
        b, t, _ = x.shape                                                        # (B, T, d_model)
        return projection(x).view(b, t, self.n_heads, self.d_head).transpose(1, 2)  # (B, H, T, d_head)

    def queries(self, x: torch.Tensor) -> torch.Tensor:
        return self._heads(x, self.wq)                                           # Q = X^Q W^Q

    def keys_values(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self._heads(x, self.wk), self._heads(x, self.wv)                 # K = X^K W^K, V = X^V W^V

    def attend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, seen: Visibility, run=None, capture=None,
               new_kv: tuple[torch.Tensor, torch.Tensor] | None = None):
        """Y (B, N_Q, d_model) for q (B, H, N_Q, d), k/v (B, H, N_KV, d); `capture` takes its rows (capture.py).

        `new_kv`: the K, V of this pass's own tokens where k, v also hold a cache's; the record keeps only
        those (AttentionRecord.k is the new tokens' keys, and the trace stacks the steps' records)."""
        site = None if run is None else run.site(self.layer, self.n_heads, self.where)
        scores = q @ k.transpose(-1, -2) * self.scale                            # S: (B, H, N_Q, N_KV)
        weights, heads, seen = attend(scores, seen, lambda a: a @ v, None, site)  # A, O_h = A_h V_h
        b, _, n_q, _ = heads.shape
        y = self.wo(heads.transpose(1, 2).reshape(b, n_q, -1))                   # concat_h O_h W^O: (B, N_Q, d_model)
        if capture is not None:                                                  # (B, ...): capture.py cuts the rows
            own_k, own_v = (k, v) if new_kv is None else new_kv
            capture.attention_of_batch(self.layer, AttentionCapture(
                q=q, k=own_k, v=own_v, weights=weights, head_out=heads, mask=seen.mask,
                kv_positions=seen.keys, scale=self.scale, kernel=site.kernel if site else SOFTMAX, rule=seen.rule),
                cross=self.where == "cross")
        return y


def padded(queries: np.ndarray, n_keys: int, key_visible: torch.Tensor | None, device) -> Visibility:
    """Every query sees every key (the full MaskRule) but a batch's padding (`key_visible` (B, 1, 1, S),
    False at padding)."""
    rule = MaskRule.of(queries, np.arange(n_keys), causal=False)
    return Visibility.by(rule, device, None if key_visible is None else ~key_visible)


class EncoderLayer(nn.Module):
    """h = LN(h + SelfAttn(h)); h = LN(h + FFN(h)), attending to the whole source."""

    def __init__(self, config: EncDecConfig, layer: int, where: str = "self"):
        super().__init__()
        self.layer = layer
        self.attn = MultiHeadAttention(config.d_model, config.n_heads, layer, where)
        self.attn_norm = LayerNorm(config.d_model, eps=config.norm_eps)
        self.ffn = MLP(config.d_model, config.d_ff, ACTIVATIONS[config.activation])
        self.ffn_norm = LayerNorm(config.d_model, eps=config.norm_eps)

    def forward(self, h: torch.Tensor, visible: torch.Tensor | None, capture=None, run=None) -> torch.Tensor:
        s = h.shape[1]
        q = self.attn.queries(h)                                                 # (B, H, S, d)
        k, v = self.attn.keys_values(h)                                          # (B, H, S, d)
        a = self.attn.attend(q, k, v, padded(np.arange(s), s, visible, h.device), run, capture)
        x = h
        h = self.attn_norm(h + a)                                                # Add & Norm
        f = self.ffn(h)
        h = self.ffn_norm(h + f)                                                 # Add & Norm: (B, S, d_model)
        if capture is not None:
            capture.block_of_batch(self.layer, x=x, residual_in=x, attn_out=a, ffn_out=f, residual=h)
        return h


class DecoderLayer(nn.Module):
    """h = LN(h + MaskedSelfAttn(h)); h = LN(h + CrossAttn(h, C)); h = LN(h + FFN(h))."""

    def __init__(self, config: EncDecConfig, layer: int):
        super().__init__()
        self.layer = layer
        self.self_attn = MultiHeadAttention(config.d_model, config.n_heads, layer, "self")
        self.self_norm = LayerNorm(config.d_model, eps=config.norm_eps)
        self.cross_attn = MultiHeadAttention(config.d_model, config.n_heads, layer, "cross")
        self.cross_norm = LayerNorm(config.d_model, eps=config.norm_eps)
        self.ffn = MLP(config.d_model, config.d_ff, ACTIVATIONS[config.activation])
        self.ffn_norm = LayerNorm(config.d_model, eps=config.norm_eps)

    def forward(self, h: torch.Tensor, step: "TargetStep", cross_kv, cache=None, capture=None) -> torch.Tensor:
        """h: (B, T, d) new target tokens; cross_kv: this layer's (K, V) of C; cache: its self K/V so far."""
        q = self.self_attn.queries(h)                                            # (B, H, T, d)
        k, v = self.self_attn.keys_values(h)
        keys, values, kv_positions = (k, v, step.positions) if cache is None else _cached(cache, k, v)
        seen = step.mask(kv_positions, h.device)                                 # causal: (T, n_kv)
        a = self.self_attn.attend(q, keys, values, seen, step.run, capture, new_kv=(k, v))
        x = h
        h = self.self_norm(h + a)                                                # Add & Norm
        cross_k, cross_v = cross_kv                                              # K, V from C: (B, H, S, d)
        source = padded(step.positions, cross_k.shape[2], step.source_visible, h.device)
        c = self.cross_attn.attend(self.cross_attn.queries(h), cross_k, cross_v, source, step.run, capture)
        h = self.cross_norm(h + c)                                               # Add & Norm
        f = self.ffn(h)
        h = self.ffn_norm(h + f)                                                 # Add & Norm: (B, T, d_model)
        if capture is not None:
            capture.block_of_batch(self.layer, x=x, residual_in=x, attn_out=a, cross_out=c, ffn_out=f, residual=h)
        return h


def _cached(cache, k: torch.Tensor, v: torch.Tensor):
    """Append one sequence's new K/V (B = 1) to a HeadCache; all keys and values so far, batched again."""
    keys, values, kv_positions = cache.update(k[0], v[0])                        # (H, n_kv, d)
    return keys[None], values[None], kv_positions


@dataclass
class TargetStep:
    """What every decoder layer of one forward pass shares: target positions, the source mask, the
    intervention run (intervention_run.InterventionRun; None: the model as it is) and the causal mask."""

    positions: np.ndarray                    # (T,) absolute target positions of the new tokens
    source_visible: torch.Tensor | None      # (B, 1, 1, S) bool: False at source padding; None = all
    run: object = None
    _masks: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    def mask(self, kv_positions: np.ndarray, device) -> Visibility:
        """The target keys at `kv_positions` each new token sees, by the causal MaskRule (no window), the
        one the decoder-only models' StepContext.mask uses; memoized, so the layers share one rule."""
        key = (int(kv_positions[0]), len(kv_positions))
        if key not in self._masks:
            self._masks[key] = Visibility.by(MaskRule.of(self.positions, kv_positions), device)
        return self._masks[key]


class EncoderDecoder(nn.Module):
    """Shared embedding E, N encoder layers, N decoder layers, logits = h E^T."""

    def __init__(self, config: EncDecConfig):
        super().__init__()
        self.config = config
        self.embed = nn.Embedding(config.vocab_size, config.d_model)             # E (shared)
        self.encoder = nn.ModuleList(EncoderLayer(config, i, "encoder") for i in range(config.n_encoder_layers))
        self.decoder = nn.ModuleList(DecoderLayer(config, i) for i in range(config.n_decoder_layers))

    def embed_tokens(self, ids: torch.Tensor, positions: np.ndarray) -> torch.Tensor:
        """E[ids] * sqrt(d_model) + PE[positions]: (B, T, d_model)."""
        pe = self.positional(positions)
        return self.embed(ids) * math.sqrt(self.config.d_model) + pe[None]

    def positional(self, positions: np.ndarray) -> torch.Tensor:
        weight = self.embed.weight
        return sinusoidal(torch.as_tensor(positions, device=weight.device), self.config.d_model, weight.dtype)

    def encode(self, source: torch.Tensor, source_visible: torch.Tensor | None = None, capture=None,
               intervention=None) -> torch.Tensor:
        """C = Encoder(source ids (B, S)); source_visible (B, 1, 1, S) hides padding. Returns (B, S, d_model).

        `intervention` reaches the encoder layers as sublayer "encoder"."""
        h = self.embed_tokens(source, np.arange(source.shape[1]))
        run = as_run(intervention)
        for layer in self.encoder:
            h = layer(h, source_visible, capture, run)
        return h

    def cross_keys_values(self, memory: torch.Tensor) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """K = C W^K and V = C W^V of every decoder layer, computed once per source: each (B, H, S, d)."""
        return [layer.cross_attn.keys_values(memory) for layer in self.decoder]

    def decode(self, target: torch.Tensor, step: TargetStep, cross_kv, cache=None, capture=None) -> torch.Tensor:
        """Decoder states (B, T, d_model) of the new target ids (B, T); `cache` holds the earlier ones."""
        h = self.embed_tokens(target, step.positions)
        for i, layer in enumerate(self.decoder):
            h = layer(h, step, cross_kv[i], None if cache is None else cache.layers[i], capture)
        return h

    def logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """logits = h E^T: (..., V)."""
        return hidden @ self.embed.weight.T

    def forward(self, source: torch.Tensor, target: torch.Tensor, pad_id: int | None = None) -> torch.Tensor:
        """Teacher-forced logits (B, T, V) of a padded batch: the training and reference path."""
        visible = None if pad_id is None else (source != pad_id)[:, None, None, :]
        memory = self.encode(source, visible)
        step = TargetStep(np.arange(target.shape[1]), visible)
        return self.logits(self.decode(target, step, self.cross_keys_values(memory)))


# ----- loading ---------------------------------------------------------------------------------
def build(hf_config: dict, tensors: dict[str, torch.Tensor], source: str = "checkpoint",
          device: str = "cpu", dtype: str = "float32") -> tuple[EncoderDecoder, EncDecConfig]:
    """An EncoderDecoder from our config.json dict and its state_dict; names and shapes are checked."""
    config = EncDecConfig.from_json(hf_config)
    with SkipParameterInit():                                # its values are the checkpoint's
        model = EncoderDecoder(config)
    tensors = {name: tensor for name, tensor in tensors.items() if name != "lm_head.weight"}  # tied to embed
    validate(tensors, model.state_dict(), source)
    try:
        model.load_state_dict({k: t.float() for k, t in tensors.items()}, strict=True)
    except RuntimeError as error:
        raise ModelLoadError(f"{source}: the weights do not fit the config ({str(error)[:120]})") from None
    model.to(device=resolve_device(device), dtype=torch_dtype(dtype)).requires_grad_(False)
    return model.eval(), config


def model_info(model: EncoderDecoder, config: EncDecConfig, name: str) -> ModelInfo:
    weight = model.embed.weight
    return ModelInfo(
        name=name, family="encdec", attention="mha", n_layers=config.n_decoder_layers,
        n_heads=config.n_heads, n_kv_heads=config.n_heads, d_model=config.d_model, d_qk=config.d_head,
        d_v=config.d_head, vocab_size=config.vocab_size, max_positions=config.max_positions,
        n_params=int(sum(p.numel() for p in model.parameters())),
        dtype=str(weight.dtype).removeprefix("torch."), device=str(weight.device),
        layer_kinds=config.layer_kinds, positional=FAMILIES[MODEL_TYPE].positional, is_encoder_decoder=True)


def load(checkpoint, device: str = "cpu", dtype: str = "float32"):
    """A LoadedModel (building.LoadedModel) from an opened Checkpoint of model_type explorer-encdec."""

    return load_built(checkpoint, build, model_info, device, dtype)
