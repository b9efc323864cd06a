"""ModelConfig.from_hf against transformers' own config classes, family by family, on config.json corner
cases: keys left out (the class defaults apply), keys set to null, the transformers-4 (rope_theta,
rope_scaling) and -5 (rope_parameters) styles, and the sliding-window switches of Qwen2, Mistral and Gemma 3.

The expectation is what transformers makes of the same dict: its config object, and for the layer
kinds what its attention reads from it (a layer slides when layer_types says so and sliding_window is set;
Mistral, which has no layer_types, slides everywhere when sliding_window is set).
"""
from __future__ import annotations

import pytest
import transformers  # the reference

from explorer.core import kv_variants
from explorer.core.config import ModelConfig
from explorer.core.errors import ModelLoadError

CLASSES = {"llama": "LlamaConfig", "mistral": "MistralConfig", "qwen2": "Qwen2Config", "qwen3": "Qwen3Config",
           "gemma3_text": "Gemma3TextConfig", "gpt2": "GPT2Config", "deepseek_v2": "DeepseekV2Config",
           "deepseek_v3": "DeepseekV3Config"}
SIZES = dict(vocab_size=128, hidden_size=64, intermediate_size=96, num_hidden_layers=4, num_attention_heads=4)
MLA = dict(kv_lora_rank=16, qk_nope_head_dim=12, qk_rope_head_dim=8, v_head_dim=10, q_lora_rank=None,
           n_routed_experts=4, num_experts_per_tok=2, moe_intermediate_size=32, n_group=1, topk_group=1)
LLAMA3 = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
          "original_max_position_embeddings": 16}

CASES = {
    "llama": [{}, dict(num_key_value_heads=2), dict(head_dim=None, num_key_value_heads=2),
              dict(sliding_window=8),                            # Llama has no window: the key is ignored
              dict(rope_theta=500.0, rope_scaling=LLAMA3),        # transformers 4
              dict(rope_parameters={**LLAMA3, "rope_theta": 500.0}),   # transformers 5
              dict(rope_scaling=None, rope_theta=20000.0), dict(tie_word_embeddings=True, rms_norm_eps=1e-5)],
    "mistral": [{}, dict(sliding_window=None), dict(sliding_window=6, num_key_value_heads=2),
                dict(num_key_value_heads=4, head_dim=24)],
    "qwen2": [{}, dict(sliding_window=8),                        # a window, but use_sliding_window absent
              dict(sliding_window=8, use_sliding_window=False),
              dict(sliding_window=8, use_sliding_window=True),
              dict(sliding_window=8, use_sliding_window=True, max_window_layers=2),
              dict(sliding_window=None, use_sliding_window=True),
              dict(sliding_window=8, use_sliding_window=True,
                   layer_types=["full_attention", "sliding_attention"] * 2),
              dict(num_key_value_heads=2, rope_theta=1e6)],
    "qwen3": [{}, dict(head_dim=24), dict(num_key_value_heads=4), dict(sliding_window=8, use_sliding_window=True,
                                                               max_window_layers=1)],
    "gemma3_text": [dict(head_dim=16), dict(head_dim=16, sliding_window=None), dict(head_dim=16, sliding_window=5),
                    dict(num_hidden_layers=7, head_dim=16, query_pre_attn_scalar=24),
                    dict(head_dim=16, layer_types=["full_attention"] * 4),
                    dict(head_dim=16, rope_theta=1e5, rope_local_base_freq=1e3),          # transformers 4
                    dict(head_dim=16, rope_parameters={"full_attention": {"rope_type": "default", "rope_theta": 1e5},
                                                       "sliding_attention": {"rope_type": "default",
                                                                             "rope_theta": 1e3}})],
    "gpt2": [dict(n_embd=64, n_layer=3, n_head=4, vocab_size=128), dict(n_embd=64, n_layer=3, n_head=4,
                                                                       vocab_size=128, n_inner=None, n_positions=32)],
    "deepseek_v2": [dict(MLA), dict(MLA, first_k_dense_replace=1, n_shared_experts=1)],
    "deepseek_v3": [dict(MLA), dict(MLA, q_lora_rank=24, n_group=2, topk_group=1, routed_scaling_factor=2.0)],
}
PARAMS = [pytest.param(family, case, id=f"{family}-{i}") for family, cases in CASES.items()
          for i, case in enumerate(cases)]


def as_json(family: str, case: dict) -> dict:
    """The config.json dict: SIZES (GPT-2 names its own) plus the case, with model_type."""
    return {**({} if family == "gpt2" else SIZES), **case, "model_type": family}


def reference_kinds(family: str, hf) -> tuple[str, ...]:
    """Per layer 'sliding' or 'causal', as transformers' attention layers read the config object."""
    n_layers = hf.num_hidden_layers
    window = getattr(hf, "sliding_window", None)
    if family == "mistral":
        return ("sliding" if window else "causal",) * n_layers
    types = getattr(hf, "layer_types", None) or ["full_attention"] * n_layers
    if family in ("llama", "deepseek_v2", "deepseek_v3"):
        types = ["full_attention"] * n_layers
    return tuple("sliding" if t == "sliding_attention" and window else "causal" for t in types)


def theta(params: dict) -> float:
    return float(params["rope_theta"])


@pytest.mark.parametrize("family, case", PARAMS)
def test_config_reads_what_transformers_reads(family, case):
    d = as_json(family, case)
    hf = getattr(transformers, CLASSES[family]).from_dict(dict(d))
    ours = ModelConfig.from_hf(d)
    assert (ours.vocab_size, ours.d_model, ours.n_layers, ours.n_heads) == (
        hf.vocab_size, hf.hidden_size, hf.num_hidden_layers, hf.num_attention_heads)
    assert ours.max_positions == hf.max_position_embeddings
    assert ours.tie_embeddings == hf.tie_word_embeddings
    assert ours.layer_kinds == reference_kinds(family, hf)
    assert ours.sliding_window == (hf.sliding_window if "sliding" in ours.layer_kinds else None)
    windows = tuple(hf.sliding_window if kind == "sliding" else None for kind in reference_kinds(family, hf))
    kv_heads = getattr(hf, "num_key_value_heads", None) or 1
    if family.startswith("deepseek") or hf.num_attention_heads % kv_heads == 0:
        assert kv_variants.cache_shape(d).windows == windows                # the KV table reads the same
    else:                                       # e.g. Qwen2's default of 32 K/V heads for 4 query heads
        with pytest.raises(ModelLoadError, match="do not divide"):
            kv_variants.cache_shape(d)
    if family == "gpt2":
        assert ours.d_ff == (hf.n_inner or 4 * hf.n_embd) and ours.norm_eps == hf.layer_norm_epsilon
        return
    assert ours.d_ff == hf.intermediate_size and ours.norm_eps == hf.rms_norm_eps
    params = hf.rope_parameters
    if family == "gemma3_text":
        assert ours.rope.theta == theta(params["full_attention"])
        assert ours.rope_local.theta == theta(params["sliding_attention"])
        assert ours.attn_scale == pytest.approx(hf.query_pre_attn_scalar ** -0.5)
    else:
        assert ours.rope.theta == theta(params)
        assert ours.rope.kind == params.get("rope_type", "default")
        assert ours.rope.factor == float(params.get("factor") or 1.0)
    if family.startswith("deepseek"):
        assert (ours.kv_lora_rank, ours.q_lora_rank, ours.qk_nope_dim, ours.qk_rope_dim, ours.v_head_dim) == (
            hf.kv_lora_rank, hf.q_lora_rank, hf.qk_nope_head_dim, hf.qk_rope_head_dim, hf.v_head_dim)
        assert (ours.n_routed_experts, ours.experts_per_token, ours.moe_d_ff, ours.first_dense_layers) == (
            hf.n_routed_experts, hf.num_experts_per_tok, hf.moe_intermediate_size, hf.first_k_dense_replace)
        assert (ours.n_shared_experts, ours.routed_scaling, ours.n_group, ours.topk_group) == (
            hf.n_shared_experts, hf.routed_scaling_factor, hf.n_group, hf.topk_group)
        return
    head_dim = getattr(hf, "head_dim", None) or hf.hidden_size // hf.num_attention_heads    # Qwen2 has none
    assert (ours.n_kv_heads, ours.d_head) == (hf.num_key_value_heads, head_dim)


def test_a_qwen2_window_without_use_sliding_window_slides_nowhere():
    """The disagreement this file was written for: Qwen2's sliding_window counts only when switched on."""
    d = as_json("qwen2", dict(sliding_window=8))
    assert ModelConfig.from_hf(d).layer_kinds == ("causal",) * 4
    assert transformers.Qwen2Config.from_dict(dict(d)).layer_types == ["full_attention"] * 4
