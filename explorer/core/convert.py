"""What-if conversions: the loaded model's attention rebuilt as another variant, before any retraining.

- **GQA / MQA by mean-pooling** (Ainslie et al. 2023, "GQA", section 2.1): the
  K and V projection heads of each group are averaged into one head,

      W_g^K = mean_{h in group g} W_h^K,   W_g^V = mean_{h in group g} W_h^V.

  The paper then uptrains for ~5% of the pre-training steps; here we look at the
  model right after pooling. More K/V heads than the model has (MHA from GQA)
  replicate each K/V head to every query head that reads it, which is exact and
  makes the cache larger. kv_variants.conversion_work names what each target does.

- **MLA by truncated SVD** (DeepSeek-AI 2024, "DeepSeek-V2", section 2.1; the
  conversions of MHA2MLA, Ji et al. 2025, and TransMLA, Meng et al. 2025). The
  stacked key and value projections of every K/V head, [W^K_nope; W^V] (with the
  bias as one more column), are factorised at rank d_c:

      [W^K_nope; W^V] ~= U_r S_r V_r^T,   W^DKV = S_r^1/2 V_r^T,   [W^UK; W^UV] = U_r S_r^1/2

  so the cache holds the latent c_KV = X W^DKV (d_c numbers per token) instead of
  the keys and values. RoPE does not commute with W^UK, so, as in MLA, a small
  decoupled key keeps the rotation: the m highest-frequency pairs of every K/V
  head (MHA2MLA's partial RoPE, S_high) go to one RoPE key of d_R = 2 m N_KV
  dims shared by all heads, each query head reading its own K/V head's slots;
  the other dimensions lose their rotation. That is the approximation these
  papers fine-tune away. With every pair kept (or without RoPE) and full rank,
  the conversion is exact.

The converted copy shares every other weight with the original (no copy); explorer.core.what_if decodes it
beside the original and compares their predictions.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from typing import Callable

import numpy as np
import torch
from torch import nn

from explorer.core import kv_variants as kv
from explorer.core.building import empty_modules
from explorer.core.config import ModelConfig, RopeSpec
from explorer.core.conversion_targets import mla_refusal
from explorer.core.errors import ExplorerError
from explorer.core.model import Transformer
from explorer.core.rope import Rotary
from explorer.core.runtime import LoadedModel, adopt, model_info

Progress = Callable[[float, str], None]


class ConversionCancelled(ExplorerError):
    """The person cancelled a running conversion."""


@dataclass(frozen=True)
class Converted:
    """A converted copy of a model and how far each layer's K/V map moved."""

    loaded: LoadedModel
    variant: str                       # "mha" | "gqa-<kv_heads>" | "mqa" | "mla-<rank>"
    relative_error: tuple[float, ...]  # per layer ||W - W_converted||_F / ||W||_F of the K/V map
    rope_dim: int | None = None        # d_R of an MLA conversion (2 * rope pairs * N_KV)


def convert(loaded: LoadedModel, variant: str, rope_pairs: int | None = None,
            progress: Progress | None = None, cancel=None) -> Converted:
    """Convert to "mha", "gqa-<kv_heads>", "mqa" or "mla-<rank>" (rope_pairs: MLA's RoPE pairs per K/V head)."""
    match = re.fullmatch(r"(mha|mqa|gqa-(\d+)|mla-(\d+))", variant)
    if match is None:
        raise ExplorerError(f"Variant {variant!r} is not one of mha, mqa, gqa-<kv_heads> or mla-<rank>.")
    if variant.startswith("mla"):
        return to_mla(loaded, int(match.group(3)), rope_pairs, progress, cancel)
    kv_heads = {"mha": loaded.config.n_heads, "mqa": 1}.get(variant) or int(match.group(2))
    return to_gqa(loaded, kv_heads, progress, cancel)


# ----- GQA / MQA ---------------------------------------------------------------------

def to_gqa(loaded: LoadedModel, kv_heads: int, progress: Progress | None = None, cancel=None) -> Converted:
    """Mean-pool (or, to more heads, replicate) the K/V heads so that `kv_heads` heads serve all N_Q query heads."""
    config = _dense_config(loaded, "GQA")
    if kv_heads <= 0 or config.n_heads % kv_heads:
        raise ExplorerError(f"{kv_heads} K/V heads do not divide the model's {config.n_heads} query heads.")
    state, errors = dict(loaded.model.state_dict()), []
    work = kv.conversion_work(config.n_kv_heads, kv_heads)      # replicating, or mean-pooling
    for layer in range(config.n_layers):
        tick(progress, cancel, layer, config.n_layers, work)
        prefix, moved, norm = f"layers.{layer}.attn.", 0.0, 0.0
        for name in ("wk.weight", "wk.bias", "wv.weight", "wv.bias"):
            if prefix + name in state:
                state[prefix + name], change, size = _pool_heads(state[prefix + name], config, kv_heads)
                moved, norm = moved + change, norm + size
        errors.append(math.sqrt(moved / max(norm, 1e-300)))
    new_config = replace(config, n_kv_heads=kv_heads)
    model = _build(new_config, state)
    name = kv.variant_name(new_config.attention_kind, kv_heads)
    tick(progress, cancel, config.n_layers, config.n_layers, "done")
    return Converted(_loaded(loaded, model, new_config, name), name, tuple(errors))


def _pool_heads(w: torch.Tensor, config: ModelConfig, kv_heads: int) -> tuple[torch.Tensor, float, float]:
    """Rows of W^K or W^V (or their bias): (N_KV*d_h, ...) -> (kv_heads*d_h, ...), each new group's mean.

    Each K/V head is first copied to every query head that reads it, so any
    divisor of N_Q works. Also returns ||W - W_pooled||^2 and ||W||^2 as every
    query head sees them.
    """
    n_q, d_h = config.n_heads, config.d_head
    rest = w.shape[1:]
    per_query = w.float().view(config.n_kv_heads, d_h, *rest).repeat_interleave(n_q // config.n_kv_heads, dim=0)
    pooled = per_query.view(kv_heads, n_q // kv_heads, d_h, *rest).mean(dim=1)            # (G, d_h, ...)
    seen = pooled.repeat_interleave(n_q // kv_heads, dim=0)                               # (N_Q, d_h, ...)
    change = float((seen - per_query).pow(2).sum())
    return pooled.reshape(kv_heads * d_h, *rest).to(w.dtype), change, float(per_query.pow(2).sum())


# ----- MLA ----------------------------------------------------------------------------

@dataclass(frozen=True)
class RopeSplit:
    """Which RoPE frequency pairs each K/V head keeps rotated (in the decoupled key) and which it drops.

    In the rotate-half layout pair i of a head is dims (i, i + d_h/2), turned by inv_freq[i].
    """

    pairs: np.ndarray    # (N_KV, m) kept pair indices per K/V head
    d_head: int

    @property
    def rope_dim(self) -> int:
        """d_R: the shared RoPE key holds 2m dims per K/V head."""
        return int(self.pairs.size) * 2

    def rope_rows(self, g: int) -> np.ndarray:
        """Head dims of K/V head g that go to the RoPE key, first halves then second halves: (2m,)."""
        return np.concatenate((self.pairs[g], self.pairs[g] + self.d_head // 2))

    def nope_rows(self, g: int) -> np.ndarray:
        """The other dims of head g, which lose their rotation: (d_h - 2m,)."""
        return np.setdiff1d(np.arange(self.d_head), self.rope_rows(g))

    def key_slots(self, g: int) -> np.ndarray:
        """Where head g's kept dims sit in the d_R-wide RoPE key (rotate-half layout over d_R): (2m,)."""
        m, half = self.pairs.shape[1], self.rope_dim // 2
        first = np.arange(g * m, (g + 1) * m)
        return np.concatenate((first, first + half))


def choose_rope_pairs(config: ModelConfig, m: int) -> RopeSplit:
    """Keep the m highest-frequency pairs of every K/V head rotated (MHA2MLA's S_high).

    Low frequencies barely turn over a short context, so dropping their rotation
    costs little; on SmolLM2-135M keeping the 8 highest of 32 pairs at full rank
    changes the next-token distribution by KL 0.02 nats, while choosing pairs by
    weight norm (which favours low frequencies) costs 1.3.
    """
    return RopeSplit(np.tile(np.arange(m, dtype=np.int64), (config.n_kv_heads, 1)), config.d_head)


def max_mla_rank(config: ModelConfig, rope_pairs: int = 0) -> int:
    """The rank of the stacked [W^K_nope; W^V] (+ bias column): the rank that loses nothing."""
    return kv.conversion_rank_limit(config.n_kv_heads, config.d_head, config.d_model, rope_pairs, config.qkv_bias)


def default_rope_pairs(config: ModelConfig) -> int:
    """d_h / 8 pairs per K/V head stay rotated (a quarter of each head's dims); none without RoPE."""
    return kv.conversion_rope_pairs(config.d_head, config.positional == "rope")


def to_mla(loaded: LoadedModel, rank: int, rope_pairs: int | None = None,
           progress: Progress | None = None, cancel=None) -> Converted:
    """Factorise each layer's K/V projections into a rank-`rank` latent plus a decoupled RoPE key
    that keeps `rope_pairs` frequency pairs of every K/V head (d_R = 2 * rope_pairs * N_KV)."""
    config = _dense_config(loaded, "MLA")
    refused = mla_refusal(loaded.name, config.qk_norm, config.layer_kinds)
    if refused:
        raise ExplorerError(refused)
    m = default_rope_pairs(config) if rope_pairs is None else int(rope_pairs)
    if not 0 <= m <= config.d_head // 2 or (config.positional != "rope" and m):
        raise ExplorerError(f"{m} RoPE pairs per head is not possible for {loaded.name} "
                            f"(0 to {config.d_head // 2 if config.positional == 'rope' else 0}).")
    limit = max_mla_rank(config, m)
    if not 0 < rank <= limit:
        raise ExplorerError(f"MLA rank {rank} must lie between 1 and {limit}, the rank of this model's K/V stack.")
    state, errors, split = dict(loaded.model.state_dict()), [], None
    for layer in range(config.n_layers):
        tick(progress, cancel, layer, config.n_layers, kv.conversion_work(config.n_kv_heads, None))
        error, split = _latent_weights(state, f"layers.{layer}.attn.", config, rank, m)
        errors.append(error)
    d_rope = 2 * m * config.n_kv_heads
    new_config = replace(config, mla=True, q_lora_rank=None, kv_lora_rank=rank, n_kv_heads=config.n_heads,
                         qk_nope_dim=config.d_head - 2 * m, qk_rope_dim=d_rope, v_head_dim=config.d_head,
                         d_head=d_rope)
    model = _build(new_config, state, lambda built: _prepare_latent_modules(built, loaded.model, config, d_rope))
    model.rotaries = {"global": _rope_table(loaded.model, split)}
    tick(progress, cancel, config.n_layers, config.n_layers, "done")
    name = f"mla-{rank}"
    return Converted(_loaded(loaded, model, new_config, name), name, tuple(errors), d_rope)


def _latent_weights(state: dict, prefix: str, config: ModelConfig, rank: int, m: int):
    """Replace wq/wk/wv of one layer in `state` by MLA's wq, wkv_a = [W^DKV; W^KR] and wkv_b = [W^UK; W^UV]."""
    n_q, n_kv, d_h, d = config.n_heads, config.n_kv_heads, config.d_head, config.d_model
    group = n_q // n_kv
    w = {n: state.pop(f"{prefix}w{n}.weight").float().view(-1, d_h, d) for n in "qkv"}    # (N, d_h, d)
    b = {n: state.pop(f"{prefix}w{n}.bias").float().view(-1, d_h, 1) if config.qkv_bias else None for n in "qkv"}
    # The bias rides along as one more input column: W X + b = [W b] [X; 1].
    wb = {n: w[n] if b[n] is None else torch.cat((w[n], b[n]), dim=-1) for n in "qkv"}   # (N, d_h, d')
    split = choose_rope_pairs(config, m)
    d_rope, d_in = split.rope_dim, wb["q"].shape[-1]
    q_rows, k_rope = [], torch.zeros(d_rope, d_in)
    for h in range(n_q):
        g = h // group
        q_rope = torch.zeros(d_rope, d_in)
        # reads only its K/V head's slots
        q_rope[split.key_slots(g)] = wb["q"][h, split.rope_rows(g)]
        q_rows.append(torch.cat((wb["q"][h, split.nope_rows(g)], q_rope)))                 # [nope; rope]: (d_qk, d')
    for g in range(n_kv):
        k_rope[split.key_slots(g)] = wb["k"][g, split.rope_rows(g)]                        # W^KR: (d_R, d')
    stack = torch.cat([torch.cat((wb["k"][g, split.nope_rows(g)], wb["v"][g])) for g in range(n_kv)])
    u, s, vh = torch.linalg.svd(stack.double(), full_matrices=False)                       # [W^K_nope; W^V] = U S V^T
    root = s[:rank].sqrt()
    down = (root[:, None] * vh[:rank]).float()                                             # W^DKV: (r, d')
    up = (u[:, :rank] * root[None, :]).float()                                             # [W^UK; W^UV]: (rows, r)
    _put(state, prefix + "wq", torch.cat(q_rows), d)
    _put(state, prefix + "wkv_a", torch.cat((down, k_rope)), d)                            # (r + d_R, d')
    state[prefix + "wkv_b.weight"] = up.view(n_kv, -1, rank).repeat_interleave(group, dim=0).reshape(-1, rank)
    energy = float((s[:rank] ** 2).sum() / (s ** 2).sum().clamp_min(1e-300))
    return math.sqrt(max(0.0, 1.0 - energy)), split


def _put(state: dict, name: str, weight_and_bias: torch.Tensor, d: int) -> None:
    """Split an augmented [W b] back into a Linear's weight and bias."""
    state[name + ".weight"] = weight_and_bias[:, :d]
    if weight_and_bias.shape[1] > d:
        state[name + ".bias"] = weight_and_bias[:, d]


def _rope_table(original: Transformer, split: RopeSplit | None) -> Rotary:
    """A RoPE table for the decoupled key: slot j turns at the original frequency of the pair it holds."""
    rotary = Rotary(RopeSpec(), 0)
    source = original.rotaries.get("global")
    if source is not None and split is not None and split.rope_dim:
        rotary.inv_freq = source.inv_freq[torch.as_tensor(split.pairs.reshape(-1))].clone()   # (d_R/2,)
        rotary.attention_factor = source.attention_factor
    return rotary


def _prepare_latent_modules(model: Transformer, original: Transformer, config: ModelConfig, d_rope: int):
    """Shape the MLA modules to take the converted weights exactly.

    The latent is not normalised (DeepSeek's kv_a_layernorm would make the
    factorisation inexact), the projections keep the original's biases, and each
    layer keeps its own attention scale.
    """
    for block, source in zip(model.layers, original.layers):
        attn, d = block.attn, config.d_model
        attn.kv_norm = nn.Identity()
        attn.wq = nn.Linear(d, config.n_heads * (config.d_head - d_rope // config.n_kv_heads + d_rope),
                            bias=config.qkv_bias)
        attn.wkv_a = nn.Linear(d, attn.d_c + d_rope, bias=config.qkv_bias)
        attn.scale = source.attn.scale


# ----- shared helpers -----------------------------------------------------------------

def _dense_config(loaded: LoadedModel, target: str) -> ModelConfig:
    config = loaded.config
    if config.mla:
        raise ExplorerError(f"{loaded.name} already caches an MLA latent; {target} conversion starts from "
                            "per-head keys and values.")
    return config


def _build(config: ModelConfig, state: dict[str, torch.Tensor], prepare=None) -> Transformer:
    """A Transformer for `config` holding `state` (the original's tensors are shared, not copied)."""
    with empty_modules():
        model = Transformer(config)
        if prepare is not None:
            prepare(model)
    dtype = next(iter(state.values())).dtype
    state = {name: tensor.to(dtype) for name, tensor in state.items()}
    return adopt(model, state, config.tie_embeddings)


def _loaded(original: LoadedModel, model: Transformer, config: ModelConfig, variant: str) -> LoadedModel:
    name = f"{original.name} as {variant}"
    return LoadedModel(model=model, config=config, tokenizer=original.tokenizer,
                       info=model_info(model, config, name), name=name, path=original.path)


def tick(progress: Progress | None, cancel, done: int, total: int, what: str) -> None:
    """Report `done` of `total` to `progress`, first raising ConversionCancelled if `cancel` (an Event or a
    callable) says the person cancelled."""
    if cancel is not None and (cancel.is_set() if hasattr(cancel, "is_set") else cancel()):
        raise ConversionCancelled("The conversion was cancelled.")
    if progress is not None:
        progress(done / max(1, total), what)
