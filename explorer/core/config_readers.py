"""config.json dict -> the fields of a ModelConfig, one reader per family (its row's `reader`, families.py).

A reader gives the numbers a family's config.json fixes, in the notation of the app (d_model, N_Q, N_KV,
d_qk), as a dict of ModelConfig's fields; ModelConfig.from_hf adds the facts its row holds (sandwich norms,
how positions enter) and builds the frozen config. Readers import nothing of the engine, so the family
table holds them as themselves and sits below config.py, which reads the table. Both config styles are read:
transformers 4 (`rope_theta`, `rope_scaling`) and 5 (`rope_parameters`, possibly nested per layer type as
Gemma 3 writes it).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from explorer.core.errors import UnsupportedModelError


@dataclass(frozen=True)
class RopeSpec:
    """Rotary position embedding parameters (RoFormer; llama3 and YaRN frequency scaling)."""

    theta: float = 10000.0
    kind: str = "default"              # "default" | "linear" | "llama3" | "yarn"
    factor: float = 1.0
    low_freq_factor: float = 1.0       # llama3
    high_freq_factor: float = 4.0      # llama3
    original_max_positions: int = 0    # llama3, yarn
    beta_fast: float = 32.0            # yarn
    beta_slow: float = 1.0             # yarn
    mscale: float = 0.0                # yarn (DeepSeek)
    mscale_all_dim: float = 0.0        # yarn (DeepSeek)
    attention_factor: float | None = None
    truncate: bool = True
    partial_rotary_factor: float = 1.0


GEMMA2_GLOBAL_EVERY = 2            # Gemma 2: sliding and global layers alternate (transformers' Gemma2Config)
GEMMA3_GLOBAL_EVERY = 6            # Gemma 3: 5 local (sliding) layers, then 1 global, repeated


def gemma3_layer_types(n_layers: int, every: int = GEMMA3_GLOBAL_EVERY) -> list[str]:
    """Gemma 3's (and, every 2nd, Gemma 2's) layer_types when a config or GGUF file does not list them: every
    `every`-th layer global."""
    return ["full_attention" if (i + 1) % every == 0 else "sliding_attention" for i in range(n_layers)]


# ----- RoPE parameters, both config styles ------------------------------------
def _rope_spec(params: dict | None, theta_default: float, max_positions: int, d: dict) -> RopeSpec:
    params = dict(params or {})
    kind = params.get("rope_type", params.get("type", "default")) or "default"
    if kind not in ("default", "linear", "llama3", "yarn"):
        raise UnsupportedModelError(f"RoPE type {kind!r} is not supported")
    original = (params.get("original_max_position_embeddings") or d.get("original_max_position_embeddings")
                or max_positions)
    return RopeSpec(
        theta=float(params.get("rope_theta", theta_default)),
        kind=kind,
        factor=float(params.get("factor") or 1.0),
        low_freq_factor=float(params.get("low_freq_factor", 1.0)),
        high_freq_factor=float(params.get("high_freq_factor", 4.0)),
        original_max_positions=int(original),
        beta_fast=float(params.get("beta_fast") or 32.0),
        beta_slow=float(params.get("beta_slow") or 1.0),
        mscale=float(params.get("mscale") or 0.0),
        mscale_all_dim=float(params.get("mscale_all_dim") or 0.0),
        attention_factor=params.get("attention_factor"),
        truncate=bool(params.get("truncate", True)),
        partial_rotary_factor=float(params.get("partial_rotary_factor", d.get("partial_rotary_factor") or 1.0)),
    )


def _global_rope(d: dict) -> RopeSpec:
    """rope_scaling + rope_theta (transformers 4) or rope_parameters (transformers 5)."""
    max_positions = int(d.get("max_position_embeddings", 2048))
    params = d.get("rope_parameters") or d.get("rope_scaling") or {}
    if "full_attention" in params:
        params = params["full_attention"] or {}
    return _rope_spec(params, float(d.get("rope_theta", 10000.0)), max_positions, d)


def _first_id(value) -> int | None:
    if isinstance(value, list):
        return int(value[0]) if value else None
    return None if value is None else int(value)


# ----- families -----------------------------------------------------------------
def read_llama(d: dict, family: str = "llama") -> dict:
    n_heads = int(d["num_attention_heads"])
    d_model = int(d["hidden_size"])
    d_head = int(d.get("head_dim") or d_model // n_heads)
    n_layers = int(d["num_hidden_layers"])
    return dict(
        family=family,
        vocab_size=int(d["vocab_size"]),
        d_model=d_model,
        n_layers=n_layers,
        n_heads=n_heads,
        n_kv_heads=int(d.get("num_key_value_heads") or n_heads),
        d_head=d_head,
        d_ff=int(d["intermediate_size"]),
        max_positions=int(d.get("max_position_embeddings", 2048)),
        norm_eps=float(d.get("rms_norm_eps", 1e-6)),
        activation=str(d.get("hidden_act", "silu")),
        qkv_bias=bool(d.get("attention_bias", False)),
        o_bias=bool(d.get("attention_bias", False)),
        mlp_bias=bool(d.get("mlp_bias", False)),
        tie_embeddings=bool(d.get("tie_word_embeddings", False)),
        attn_scale=d_head ** -0.5,
        layer_kinds=("causal",) * n_layers,       # Llama has no window; the families with one set it
        sliding_window=None,
        rope=_global_rope(d),
        bos_token_id=_first_id(d.get("bos_token_id")),
        eos_token_id=_first_id(d.get("eos_token_id")),
    )


def _with_window(config: dict, window, layer_types, first_sliding: int = 0) -> dict:
    """Layer kinds as transformers' attention reads them: a layer slides when layer_types (or, without
    them, its index >= first_sliding) says so and there is a window at all."""
    window = int(window) if window else None
    n = config["n_layers"]
    types = list(layer_types or ["sliding_attention" if i >= first_sliding else "full_attention" for i in range(n)])
    if len(types) != n:
        raise ValueError(f"layer_types lists {len(types)} layers, not num_hidden_layers={n}")
    kinds = tuple("sliding" if t == "sliding_attention" and window else "causal" for t in types)
    return {**config, "layer_kinds": kinds, "sliding_window": window if "sliding" in kinds else None}


def _qwen_window(d: dict, config: dict) -> dict:
    """Qwen2/3: sliding_window counts only with use_sliding_window, from layer max_window_layers on."""
    window = d.get("sliding_window") if d.get("use_sliding_window") else None
    return _with_window(config, window, d.get("layer_types"), int(d.get("max_window_layers") or 0))


def read_qwen2(d: dict) -> dict:
    return _qwen_window(d, {**read_llama(d, "qwen2"), "qkv_bias": True, "o_bias": False})


def read_qwen3(d: dict) -> dict:
    return _qwen_window(d, {**read_llama(d, "qwen3"), "qk_norm": True})


def read_seed_oss(d: dict) -> dict:
    """Seed-OSS: Llama's blocks; attention_bias puts a bias on q, k and v only, attention_out_bias on o."""
    return {**read_llama(d, "seed_oss"), "o_bias": bool(d.get("attention_out_bias", False))}


def read_helium(d: dict) -> dict:
    """Helium: Llama's blocks with RoPE rotating the pairs (x0, x1), (x2, x3) (transformers' HeliumAttention
    repeats each angle twice and rotates neighbours), and no bias on o whatever attention_bias says."""
    return {**read_llama(d, "helium"), "rope_interleave": True, "o_bias": False}


def read_mistral(d: dict) -> dict:
    """Mistral: one window for every layer (transformers' MistralConfig has no layer_types)."""
    return _with_window(read_llama(d, "mistral"), d.get("sliding_window"), None)


def read_phi3(d: dict) -> dict:
    """Phi-3: Llama's blocks (fused projections only in the checkpoint), with Mistral's one optional window."""
    return _with_window(read_llama(d, "phi3"), d.get("sliding_window"), None)


def _gemma_embedding_and_norms(config: dict) -> dict:
    """Every Gemma: RMSNorm scales by (1 + w), and the embedding enters as h_0 = E[ids] * sqrt(d_model)."""
    return {**config, "norm": "rms_offset", "embed_scale": math.sqrt(config["d_model"])}


def _causal_gemma(d: dict) -> dict:
    """The config dict, unless it asks for bidirectional attention (an encoder's), which transformers' Gemma
    runs without the causal mask and the engine does not run."""
    if d.get("use_bidirectional_attention"):
        raise UnsupportedModelError(f"model_type {d.get('model_type')!r} with use_bidirectional_attention is an "
                                    "encoder; only the causal (decoding) Gemma is supported")
    return d


def read_gemma(d: dict) -> dict:
    """Gemma 1: Llama's blocks with Gemma's norms and embedding scale, FFN = W_down(GELU_tanh(X W_gate) * X W_up).
    transformers reads the first releases' hidden_act "gelu" as the tanh approximation (GemmaConfig)."""
    act = _causal_gemma(d).get("hidden_act") or "gelu_pytorch_tanh"
    d = {**d, "hidden_act": "gelu_pytorch_tanh" if act == "gelu" else act}
    return _gemma_embedding_and_norms(read_llama(d, "gemma"))


def read_gemma2(d: dict) -> dict:
    """Gemma 2: Gemma's blocks with a norm after each sublayer (sandwich), S = Q K^T / sqrt(query_pre_attn_scalar)
    soft-capped as c tanh(S / c) (attn_logit_softcapping, which transformers' Gemma 2 applies), logits capped
    the same way (final_logit_softcapping), and sliding layers alternating with global ones from layer 0."""
    d = {**_causal_gemma(d), "hidden_act": d.get("hidden_activation") or "gelu_pytorch_tanh"}
    types = d.get("layer_types") or gemma3_layer_types(int(d["num_hidden_layers"]), GEMMA2_GLOBAL_EVERY)
    config = _with_window(read_llama(d, "gemma2"), d.get("sliding_window"), types)
    return {**_gemma_embedding_and_norms(config),
            "attn_scale": float(d.get("query_pre_attn_scalar") or config["d_head"]) ** -0.5,
            "attn_softcap": d.get("attn_logit_softcapping"), "final_softcap": d.get("final_logit_softcapping")}


def read_gemma3(d: dict) -> dict:
    d = dict(d)
    d["hidden_act"] = d.get("hidden_activation") or d.get("hidden_act") or "gelu_pytorch_tanh"
    n_layers = int(d["num_hidden_layers"])
    types = d.get("layer_types") or gemma3_layer_types(n_layers, int(d.get("sliding_window_pattern") or
                                                                     GEMMA3_GLOBAL_EVERY))
    config = _with_window(read_llama(d, "gemma3"), d.get("sliding_window"), types)
    params = d.get("rope_parameters") or {}
    max_positions = config["max_positions"]
    if "sliding_attention" in params:
        local = _rope_spec(params["sliding_attention"], 10000.0, max_positions, d)
        rope = _rope_spec(params.get("full_attention"), 1_000_000.0, max_positions, d)
    else:
        local = _rope_spec(None, float(d.get("rope_local_base_freq", 10000.0)), max_positions, d)
        rope = _rope_spec(d.get("rope_scaling"), float(d.get("rope_theta", 1_000_000.0)), max_positions, d)
    return {
        **_gemma_embedding_and_norms(config), "qk_norm": True,
        "attn_scale": float(d.get("query_pre_attn_scalar", config["d_head"])) ** -0.5,
        # transformers' Gemma 3 keeps attn_logit_softcapping in its config but its attention never applies
        # it (Gemma 2's did): the scores are not capped, whatever the key says. The logits' cap is applied.
        "attn_softcap": None, "final_softcap": d.get("final_logit_softcapping"),
        "rope": rope, "rope_local": local}


def read_gpt2(d: dict) -> dict:
    d_model = int(d["n_embd"])
    n_heads = int(d["n_head"])
    n_layers = int(d["n_layer"])
    d_head = d_model // n_heads
    return dict(
        family="gpt2", vocab_size=int(d["vocab_size"]), d_model=d_model, n_layers=n_layers,
        n_heads=n_heads, n_kv_heads=n_heads, d_head=d_head,
        d_ff=int(d.get("n_inner") or 4 * d_model),
        max_positions=int(d.get("n_positions", 1024)),
        norm="layer", norm_eps=float(d.get("layer_norm_epsilon", 1e-5)),
        activation=str(d.get("activation_function", "gelu_new")), ffn="mlp",
        qkv_bias=True, o_bias=True, mlp_bias=True,
        tie_embeddings=bool(d.get("tie_word_embeddings", True)),
        attn_scale=d_head ** -0.5 if d.get("scale_attn_weights", True) else 1.0,
        attn_scale_by_layer=bool(d.get("scale_attn_by_inverse_layer_idx", False)),
        layer_kinds=("causal",) * n_layers,
        bos_token_id=_first_id(d.get("bos_token_id")), eos_token_id=_first_id(d.get("eos_token_id")),
    )


def _deepseek(d: dict, family: str, **router) -> dict:
    """DeepSeek's MLA and experts; `router` holds what V2 and V3 read differently (their readers below)."""
    config = read_llama(d, family)
    nope, rope_dim, v_dim = int(d["qk_nope_head_dim"]), int(d["qk_rope_head_dim"]), int(d["v_head_dim"])
    rope = config["rope"]
    scale = (nope + rope_dim) ** -0.5
    if rope.kind != "default" and rope.mscale_all_dim:
        mscale = 0.1 * rope.mscale_all_dim * math.log(rope.factor) + 1.0 if rope.factor > 1 else 1.0
        scale = scale * mscale * mscale
    n_experts = int(d.get("n_routed_experts") or 0)
    return dict(
        config, n_kv_heads=config["n_heads"], d_head=rope_dim, attn_scale=scale, qkv_bias=False,
        o_bias=bool(d.get("attention_bias", False)),
        mla=True, q_lora_rank=d.get("q_lora_rank"), kv_lora_rank=int(d["kv_lora_rank"]),
        qk_nope_dim=nope, qk_rope_dim=rope_dim, v_head_dim=v_dim,
        n_routed_experts=n_experts, n_shared_experts=int(d.get("n_shared_experts") or 0),
        experts_per_token=int(d.get("num_experts_per_tok") or 0),
        moe_d_ff=int(d.get("moe_intermediate_size") or 0),
        first_dense_layers=int(d.get("first_k_dense_replace") or 0),
        routed_scaling=float(d.get("routed_scaling_factor") or 1.0),
        n_group=int(d.get("n_group") or 1), topk_group=int(d.get("topk_group") or 1),
        **router,
    )


def read_deepseek_v2(d: dict) -> dict:
    """DeepSeek V2: RoPE on neighbouring pairs; softmax router scores, experts chosen by topk_method."""
    return _deepseek(d, "deepseek_v2", rope_interleave=True, router_score="softmax",
                     router_groups=str(d.get("topk_method") or "greedy"), norm_topk_prob=False)


def read_deepseek_v3(d: dict) -> dict:
    """DeepSeek V3: rope_interleave from the config; sigmoid router scores, grouped top-k (noaux_tc), and the
    chosen weights renormalised where norm_topk_prob says."""
    return _deepseek(d, "deepseek_v3", rope_interleave=bool(d.get("rope_interleave", True)),
                     router_score="sigmoid", router_groups="noaux_tc",
                     norm_topk_prob=bool(d.get("norm_topk_prob", False)))


def read_bert(d: dict) -> dict:
    """A transformers BertConfig dict (absolute positions only)."""
    if d.get("position_embedding_type", "absolute") != "absolute":
        raise UnsupportedModelError(
            f"BERT position_embedding_type {d['position_embedding_type']!r} is not supported (only 'absolute')")
    if d.get("is_decoder") or d.get("add_cross_attention"):
        raise UnsupportedModelError("a BERT configured as a decoder is not supported; only the encoder is")
    d_model, n_heads, n_layers = int(d["hidden_size"]), int(d["num_attention_heads"]), int(d["num_hidden_layers"])
    return dict(
        family="bert", vocab_size=int(d["vocab_size"]), d_model=d_model, n_layers=n_layers, n_heads=n_heads,
        n_kv_heads=n_heads, d_head=d_model // n_heads, d_ff=int(d["intermediate_size"]),
        max_positions=int(d.get("max_position_embeddings", 512)), norm="layer",
        norm_eps=float(d.get("layer_norm_eps", 1e-12)), activation=str(d.get("hidden_act", "gelu")),
        ffn="mlp", qkv_bias=True, o_bias=True, mlp_bias=True,
        attn_scale=(d_model // n_heads) ** -0.5, layer_kinds=("full",) * n_layers,
        bos_token_id=None, eos_token_id=None)
