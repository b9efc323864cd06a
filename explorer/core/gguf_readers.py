"""The GGUF config readers: a GGUF file's header -> the config.json dict the engine builds from, one function per
architecture the engine builds (llama, gemma, gemma2, gemma3, phi3), held by its family's row
(families.ModelFamily.gguf_reader).

llama.cpp writes a model's numbers under `<arch>.<key>` (`llama.block_count`, `gemma3.attention.sliding_window`);
`HF_KEYS` maps each config.json key to its GGUF key. The readers are plain Python over a parsed header: every
value is read through its typed getter (loaders.gguf_header.GGUFHeader.scalar, which checks it against the
config schema), so this module imports neither torch nor gguf nor the schema, and the row may hold it.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

from explorer.core.config_readers import GEMMA2_GLOBAL_EVERY, GEMMA3_GLOBAL_EVERY, gemma3_layer_types
from explorer.core.errors import ModelLoadError, UnsupportedModelError

if TYPE_CHECKING:            # the header is only read here, never built
    from explorer.core.loaders.gguf_header import GGUFHeader

# config.json key -> (GGUF key under "<arch>.", default); a None default means the key is required.
HF_KEYS = {
    "hidden_size": ("embedding_length", None),
    "intermediate_size": ("feed_forward_length", None),
    "num_hidden_layers": ("block_count", None),
    "num_attention_heads": ("attention.head_count", None),
    "rms_norm_eps": ("attention.layer_norm_rms_epsilon", 1e-6),
    "rope_theta": ("rope.freq_base", 10000.0),
    "max_position_embeddings": ("context_length", 2048),
}
# Keys only some architectures carry (read when present).
OPTIONAL_KEYS = {
    "num_key_value_heads": "attention.head_count_kv",
    "attn_logit_softcapping": "attn_logit_softcapping", "final_logit_softcapping": "final_logit_softcapping",
    "head_dim": "attention.key_length",
    "sliding_window": "attention.sliding_window",
    "kv_lora_rank": "attention.kv_lora_rank",
    "qk_rope_head_dim": "rope.dimension_count",
    "v_head_dim": "attention.value_length",
}
LOCAL_KEYS = {"rope_local_base_freq": "rope.freq_base_swa"}       # Gemma 3's sliding layers
ROTARY_KEYS = {"partial_rotary_factor": "rope.dimension_count"}     # read as a count of rotated numbers a head
GEMMA3_LOCAL_ROPE_BASE = 10000.0  # llama.cpp: rope_freq_base_train_swa


def _token_id(header: GGUFHeader, key: str, source: str) -> int:
    value = header.metadata[key]
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ModelLoadError(f"{source}: {key} = {value!r} is not a token id.")
    return value


def _common_config(header: GGUFHeader, source: str) -> dict:
    config = {hf: header.scalar(key, default, source, hf) for hf, (key, default) in HF_KEYS.items()}
    heads = config["num_attention_heads"]
    config["num_key_value_heads"] = header.scalar(OPTIONAL_KEYS["num_key_value_heads"], heads, source,
                                                  "num_key_value_heads")
    config["head_dim"] = header.scalar(OPTIONAL_KEYS["head_dim"], config["hidden_size"] // heads, source, "head_dim")
    rotated = header.scalar(ROTARY_KEYS["partial_rotary_factor"], config["head_dim"], source, "head_dim")
    if rotated != config["head_dim"]:      # llama.cpp's n_rot, the first n_rot of each head rotated: the schema's
        config["partial_rotary_factor"] = rotated / config["head_dim"]     # one rule on partial rotation refuses it
    embed = next((t for t in header.tensors if t.name == "token_embd.weight"), None)
    if embed is None:
        raise ModelLoadError(f"{source} has no token_embd.weight tensor.")
    config["vocab_size"] = embed.shape[0]
    config["tie_word_embeddings"] = not any(t.name == "output.weight" for t in header.tensors)
    for hf, key in (("bos_token_id", "bos_token_id"), ("eos_token_id", "eos_token_id"),
                    ("pad_token_id", "padding_token_id")):
        if f"tokenizer.ggml.{key}" in header.metadata:
            config[hf] = _token_id(header, f"tokenizer.ggml.{key}", source)
    config["torch_dtype"] = "float32"
    config["rope_scaling"] = _rope_scaling(header, source)
    return config


def _rope_scaling(header: GGUFHeader, source: str) -> dict | None:
    if any(t.name == "rope_freqs.weight" for t in header.tensors):
        raise UnsupportedModelError(f"{source} stores Llama 3 RoPE scaling as rope_freqs, which is not supported yet.")
    kind = header.get("rope.scaling.type")
    factor = header.get("rope.scaling.factor")
    if kind in (None, "none") or not factor:
        return None
    if kind != "linear":
        raise UnsupportedModelError(f"{source} uses RoPE scaling {kind!r}; only 'linear' is supported for GGUF.")
    if isinstance(factor, bool) or not isinstance(factor, (int, float)) or not math.isfinite(factor) or factor <= 0:
        raise ModelLoadError(f"{source}: {header.architecture}.rope.scaling.factor = {factor!r}"
                             " is not a positive number.")
    return {"rope_type": "linear", "factor": float(factor)}


def llama_config(header: GGUFHeader, source: str) -> dict:
    config = _common_config(header, source)
    config.update(model_type="llama", architectures=["LlamaForCausalLM"], hidden_act="silu",
                  attention_bias=False, mlp_bias=False)
    return config


def _query_pre_attn_scalar(config: dict, layers_of_the_largest: int) -> int:
    """llama.cpp scales Gemma 2 and 3 queries by 1/sqrt(head_dim), but those of the largest size (Gemma 2 27B: 46
    layers, Gemma 3 27B: 62) by 1/sqrt(d_model / heads): the file says which only by its layer count."""
    if config["num_hidden_layers"] == layers_of_the_largest:
        return config["hidden_size"] // config["num_attention_heads"]
    return config["head_dim"]


def gemma_config(header: GGUFHeader, source: str) -> dict:
    """Gemma 1: Llama's keys, GELU (tanh) gating; llama.cpp writes no other."""
    config = _common_config(header, source)
    config.update(model_type="gemma", architectures=["GemmaForCausalLM"], hidden_act="gelu_pytorch_tanh",
                  attention_bias=False)
    return config


# llama.cpp's defaults where a Gemma 2 file leaves its soft-caps out (llama_hparams), transformers' too.
GEMMA2_SOFTCAPS = {"attn_logit_softcapping": 50.0, "final_logit_softcapping": 30.0}


def gemma2_config(header: GGUFHeader, source: str) -> dict:
    """Gemma 2: sliding and global layers alternating from layer 0, both soft-caps, the query scale by size."""
    config = _common_config(header, source)
    caps = {hf: float(header.scalar(hf, default, source, hf)) for hf, default in GEMMA2_SOFTCAPS.items()}
    config.update(
        model_type="gemma2", architectures=["Gemma2ForCausalLM"], hidden_activation="gelu_pytorch_tanh",
        attention_bias=False, **caps,
        sliding_window=int(header.scalar("attention.sliding_window", 4096, source, "sliding_window")),
        layer_types=gemma3_layer_types(config["num_hidden_layers"], GEMMA2_GLOBAL_EVERY),
        query_pre_attn_scalar=_query_pre_attn_scalar(config, 46))
    return config


def phi3_config(header: GGUFHeader, source: str) -> dict:
    """Phi-3: Llama's keys with fused projections (attn_qkv, ffn_up = gate | up), an optional window on every
    layer (llama.cpp applies the file's sliding_window), and the context its RoPE was trained for."""
    config = _common_config(header, source)
    window = header.get("attention.sliding_window")
    original = header.get("rope.scaling.original_context_length")
    config.update(model_type="phi3", architectures=["Phi3ForCausalLM"], hidden_act="silu", attention_bias=False,
                  sliding_window=None if window is None else header.scalar("attention.sliding_window", None,
                                                                           source, "sliding_window"))
    if original is not None:
        config["original_max_position_embeddings"] = header.scalar(
            "rope.scaling.original_context_length", None, source, "max_position_embeddings")
    return config


def gemma3_file_layer_types(header: GGUFHeader, layers: int) -> list[str]:
    """From the file's per-layer sliding flags, its pattern, or llama.cpp's fixed 5 local : 1 global."""
    pattern = header.get("attention.sliding_window_pattern", GEMMA3_GLOBAL_EVERY)
    if isinstance(pattern, list) and len(pattern) == layers:
        return ["sliding_attention" if flag else "full_attention" for flag in pattern]
    return gemma3_layer_types(layers, pattern if isinstance(pattern, int) and pattern > 0 else GEMMA3_GLOBAL_EVERY)


def gemma3_config(header: GGUFHeader, source: str) -> dict:
    config = _common_config(header, source)
    layers = config["num_hidden_layers"]
    config.update(
        model_type="gemma3_text", architectures=["Gemma3ForCausalLM"], hidden_activation="gelu_pytorch_tanh",
        attention_bias=False, attn_logit_softcapping=None, final_logit_softcapping=None,
        sliding_window=int(header.scalar("attention.sliding_window", 512, source, "sliding_window")),
        layer_types=gemma3_file_layer_types(header, layers),
        rope_local_base_freq=float(header.scalar(LOCAL_KEYS["rope_local_base_freq"], GEMMA3_LOCAL_ROPE_BASE, source,
                                                 "rope_local_base_freq")),
        query_pre_attn_scalar=_query_pre_attn_scalar(config, 62),
    )
    return config


# What the KV table's keys-only reading of a GGUF file (loaders.gguf_config.dimensions_of, where the row's
# reader cannot read the file, or the row has none) adds for an architecture: ModelFamily.gguf_dimensions.
def gemma3_dimensions(header: GGUFHeader, config: dict, source: str) -> None:
    """Which layers are sliding (the cache of a sliding layer holds at most its window)."""
    config["layer_types"] = gemma3_file_layer_types(header, int(config.get("num_hidden_layers") or 0))


def deepseek2_dimensions(header: GGUFHeader, config: dict, source: str) -> None:
    """MLA's head sizes, which llama.cpp stores under their own keys: d_h = d_nope + d_R, and d_v."""
    def present(key: str, hf: str):
        return header.scalar(key, None, source, hf) if header.get(key) is not None else None

    key_length = present("attention.key_length_mla", "head_dim") or config.get("head_dim")
    config["v_head_dim"] = present("attention.value_length_mla", "v_head_dim") or config.get("v_head_dim")
    if key_length is not None and config.get("qk_rope_head_dim") is not None:
        config["qk_nope_head_dim"] = key_length - config["qk_rope_head_dim"]
