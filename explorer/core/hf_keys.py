"""A decoder's ModelConfig written back as the config.json keys transformers reads: one function per family,
named by the family's row (families.ModelFamily.writing), so that save_hf writes a folder transformers loads.

Each function is the inverse of the family's config reader (config.py): the engine reads the keys it writes
back as the same ModelConfig (save_hf.check_round_trip holds it to that). Torch-free, and free of the
engine's modules, so that the family table can hold the writers themselves.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from explorer.core.errors import ExplorerError


def rope_config(rope) -> dict:
    """rope_theta and, where the frequencies are scaled, rope_scaling, as transformers' configs write them
    (transformers 5 reads this form too, into rope_parameters)."""
    out = {"rope_theta": rope.theta}
    if rope.kind == "llama3":
        out["rope_scaling"] = {"rope_type": "llama3", "factor": rope.factor, "low_freq_factor": rope.low_freq_factor,
                               "high_freq_factor": rope.high_freq_factor,
                               "original_max_position_embeddings": rope.original_max_positions}
    elif rope.kind == "linear":
        out["rope_scaling"] = {"rope_type": "linear", "factor": rope.factor}
    elif rope.kind == "yarn":
        out["rope_scaling"] = {"rope_type": "yarn", "factor": rope.factor, "beta_fast": rope.beta_fast,
                               "beta_slow": rope.beta_slow, "mscale": rope.mscale,
                               "mscale_all_dim": rope.mscale_all_dim, "truncate": rope.truncate,
                               "original_max_position_embeddings": rope.original_max_positions}
        if rope.attention_factor is not None:
            out["rope_scaling"]["attention_factor"] = rope.attention_factor
    elif rope.kind != "default":
        raise ExplorerError(f"rope scaling {rope.kind!r} is not written back by save_hf")
    if rope.partial_rotary_factor != 1.0:
        out["partial_rotary_factor"] = rope.partial_rotary_factor
    return out


def _layer_types(config) -> list[str]:
    """transformers' per-layer attention names of the engine's layer kinds."""
    return ["sliding_attention" if kind == "sliding" else "full_attention" for kind in config.layer_kinds]


def llama_keys(config) -> dict:
    """The keys every Llama-like config.json shares (Llama, Mistral, Qwen, Gemma 3, DeepSeek)."""
    return {"vocab_size": config.vocab_size, "hidden_size": config.d_model, "intermediate_size": config.d_ff,
            "num_hidden_layers": config.n_layers, "num_attention_heads": config.n_heads,
            "num_key_value_heads": config.n_kv_heads, "head_dim": config.d_head,
            "max_position_embeddings": config.max_positions, "rms_norm_eps": config.norm_eps,
            "hidden_act": config.activation, "tie_word_embeddings": config.tie_embeddings,
            "attention_bias": config.qkv_bias, "mlp_bias": config.mlp_bias,
            "bos_token_id": config.bos_token_id, "eos_token_id": config.eos_token_id, **rope_config(config.rope),
            **_original_positions(config)}


def _original_positions(config) -> dict:
    """The context RoPE was trained for, where the config says one apart from max_position_embeddings (Phi-3
    does; the engine keeps it in the RopeSpec whatever the RoPE kind)."""
    original = config.rope.original_max_positions
    return {} if original == config.max_positions else {"original_max_position_embeddings": original}


def mistral_keys(config) -> dict:
    return {**llama_keys(config), "sliding_window": config.sliding_window}


def seed_oss_keys(config) -> dict:
    """Seed-OSS: the bias of o apart from that of q, k and v."""
    return {**llama_keys(config), "attention_out_bias": config.o_bias}


def phi3_keys(config) -> dict:
    """Phi-3: Mistral's one optional window; no pad id (its embedding would take it as padding_idx, which only
    changes gradients, and the default 32000 lies outside a smaller vocabulary)."""
    return {**mistral_keys(config), "pad_token_id": None}


def qwen_keys(config) -> dict:
    """Qwen2/3: a window counts only with use_sliding_window, and slides from layer max_window_layers on."""
    sliding = [i for i, kind in enumerate(config.layer_kinds) if kind == "sliding"]
    window = {"use_sliding_window": True, "sliding_window": config.sliding_window, "max_window_layers": sliding[0],
              "layer_types": _layer_types(config)} if sliding else {"use_sliding_window": False}
    return {**llama_keys(config), **window}


def gpt2_keys(config) -> dict:
    return {"vocab_size": config.vocab_size, "n_embd": config.d_model, "n_layer": config.n_layers,
            "n_head": config.n_heads, "n_inner": config.d_ff, "n_positions": config.max_positions,
            "layer_norm_epsilon": config.norm_eps, "activation_function": config.activation,
            "tie_word_embeddings": config.tie_embeddings, "scale_attn_weights": config.attn_scale != 1.0,
            "scale_attn_by_inverse_layer_idx": config.attn_scale_by_layer,
            "bos_token_id": config.bos_token_id, "eos_token_id": config.eos_token_id}


def gemma3_keys(config) -> dict:
    """Gemma 3: S = Q K^T / sqrt(query_pre_attn_scalar), local RoPE on the sliding layers, optional soft-caps."""
    local = config.rope_local
    if local is None or local.kind != "default":
        raise ExplorerError(f"a Gemma 3 local RoPE of kind {getattr(local, 'kind', None)!r} is not written back "
                            "by save_hf")
    if config.attn_softcap is not None:     # transformers' Gemma 3 attention never reads the key
        raise ExplorerError(f"save_hf cannot write a Gemma 3 whose attention scores are soft-capped "
                            f"({config.attn_softcap}): transformers' Gemma 3 ignores attn_logit_softcapping")
    return {**gemma2_keys(config), "rope_local_base_freq": local.theta}


def _query_pre_attn_scalar(config):
    """The query_pre_attn_scalar of S = Q K^T / sqrt(scalar): the whole number it was read from, where that
    reads back exactly."""
    scalar = config.attn_scale ** -2
    return next((s for s in (round(scalar), scalar) if float(s) ** -0.5 == config.attn_scale), scalar)


def gemma2_keys(config) -> dict:
    """Gemma 2 (and 3): the activation under hidden_activation, the scale's query_pre_attn_scalar, sliding and
    global layers, both soft-caps (null where there is none: an absent key would mean transformers' default).
    transformers builds their sliding mask whether or not a layer slides, so a model without a window gets one
    as long as its context, which no layer reads (layer_types)."""
    out = {**llama_keys(config), "hidden_activation": config.activation,
           "query_pre_attn_scalar": _query_pre_attn_scalar(config),
           "sliding_window": config.sliding_window or config.max_positions,
           "layer_types": _layer_types(config), "attn_logit_softcapping": config.attn_softcap,
           "final_logit_softcapping": config.final_softcap}
    del out["hidden_act"]
    return out


def _deepseek_keys(config) -> dict:
    """DeepSeek V2 and V3 alike: MLA's ranks and head parts, and the experts' router."""
    return {**llama_keys(config), "attention_bias": config.o_bias, "head_dim": config.qk_rope_dim,
            "q_lora_rank": config.q_lora_rank, "kv_lora_rank": config.kv_lora_rank,
            "qk_nope_head_dim": config.qk_nope_dim, "qk_rope_head_dim": config.qk_rope_dim,
            "v_head_dim": config.v_head_dim, "n_routed_experts": config.n_routed_experts,
            "n_shared_experts": config.n_shared_experts, "num_experts_per_tok": config.experts_per_token,
            "moe_intermediate_size": config.moe_d_ff, "first_k_dense_replace": config.first_dense_layers,
            "routed_scaling_factor": config.routed_scaling, "n_group": config.n_group,
            "topk_group": config.topk_group}


def deepseek_v2_keys(config) -> dict:
    """DeepSeek V2: the shared keys and the router's top-k method."""
    return {**_deepseek_keys(config), "topk_method": config.router_groups}


def deepseek_v3_keys(config) -> dict:
    """DeepSeek V3: the shared keys, the router's normalised top-k and the interleaved RoPE."""
    return {**_deepseek_keys(config), "norm_topk_prob": config.norm_topk_prob,
            "rope_interleave": config.rope_interleave,
            "num_nextn_predict_layers": 0}      # the multi-token-prediction layer is not part of decoding


@dataclass(frozen=True)
class HFWriting:
    """How one family goes out: its transformers model_type and class, its config.json keys, and the prefix
    of its base model's weights where that is not the weight table's own."""

    model_type: str
    architecture: str
    keys: Callable[[object], dict]
    prefix: str = ""
