"""A loaded model written back as a Hugging Face folder: config.json, model.safetensors, tokenizer.json.

The weights are the engine's own (a GGUF file's already dequantized and un-permuted), named by
the inverse of the family's weight table (families.ModelFamily.weights), so transformers (and what
reads through it) loads the folder without converting anything again. Decoder families: Llama,
Mistral, Qwen2, Qwen3, Phi-3, GPT-2, Gemma 1, 2 and 3 (text) and DeepSeek V2/V3 (MLA and its experts).

Two checks make a folder that loads into another model impossible: every weight of the model must
have a place in the checkpoint, and config.json, read back by the engine's own reader (which the
parity tests hold to transformers' reading), must give the model's ModelConfig again. Anything
either check refuses is one ExplorerError naming the model and the first thing that does not fit.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Callable

import torch

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


def _llama_keys(config) -> dict:
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


def _mistral_keys(config) -> dict:
    return {**_llama_keys(config), "sliding_window": config.sliding_window}


def _phi3_keys(config) -> dict:
    """Phi-3: Mistral's one optional window; no pad id (its embedding would take it as padding_idx, which only
    changes gradients, and the default 32000 lies outside a smaller vocabulary)."""
    return {**_mistral_keys(config), "pad_token_id": None}


def _qwen_keys(config) -> dict:
    """Qwen2/3: a window counts only with use_sliding_window, and slides from layer max_window_layers on."""
    sliding = [i for i, kind in enumerate(config.layer_kinds) if kind == "sliding"]
    window = {"use_sliding_window": True, "sliding_window": config.sliding_window, "max_window_layers": sliding[0],
              "layer_types": _layer_types(config)} if sliding else {"use_sliding_window": False}
    return {**_llama_keys(config), **window}


def _gpt2_keys(config) -> dict:
    return {"vocab_size": config.vocab_size, "n_embd": config.d_model, "n_layer": config.n_layers,
            "n_head": config.n_heads, "n_inner": config.d_ff, "n_positions": config.max_positions,
            "layer_norm_epsilon": config.norm_eps, "activation_function": config.activation,
            "tie_word_embeddings": config.tie_embeddings, "scale_attn_weights": config.attn_scale != 1.0,
            "scale_attn_by_inverse_layer_idx": config.attn_scale_by_layer,
            "bos_token_id": config.bos_token_id, "eos_token_id": config.eos_token_id}


def _gemma3_keys(config) -> dict:
    """Gemma 3: S = Q K^T / sqrt(query_pre_attn_scalar), local RoPE on the sliding layers, optional soft-caps."""
    local = config.rope_local
    if local is None or local.kind != "default":
        raise ExplorerError(f"a Gemma 3 local RoPE of kind {getattr(local, 'kind', None)!r} is not written back "
                            "by save_hf")
    if config.attn_softcap is not None:     # transformers' Gemma 3 attention never reads the key
        raise ExplorerError(f"save_hf cannot write a Gemma 3 whose attention scores are soft-capped "
                            f"({config.attn_softcap}): transformers' Gemma 3 ignores attn_logit_softcapping")
    return {**_gemma2_keys(config), "rope_local_base_freq": local.theta}


def _query_pre_attn_scalar(config):
    """The query_pre_attn_scalar of S = Q K^T / sqrt(scalar): the whole number it was read from, where that
    reads back exactly."""
    scalar = config.attn_scale ** -2
    return next((s for s in (round(scalar), scalar) if float(s) ** -0.5 == config.attn_scale), scalar)


def _gemma2_keys(config) -> dict:
    """Gemma 2 (and 3): the activation under hidden_activation, the scale's query_pre_attn_scalar, sliding and
    global layers, both soft-caps (null where there is none: an absent key would mean transformers' default).
    transformers builds their sliding mask whether or not a layer slides, so a model without a window gets one
    as long as its context, which no layer reads (layer_types)."""
    out = {**_llama_keys(config), "hidden_activation": config.activation,
           "query_pre_attn_scalar": _query_pre_attn_scalar(config),
           "sliding_window": config.sliding_window or config.max_positions,
           "layer_types": _layer_types(config), "attn_logit_softcapping": config.attn_softcap,
           "final_logit_softcapping": config.final_softcap}
    del out["hidden_act"]
    return out


def _deepseek_keys(config) -> dict:
    """DeepSeek V2/V3: MLA's ranks and head parts, and the experts' router."""
    out = {**_llama_keys(config), "attention_bias": config.o_bias, "head_dim": config.qk_rope_dim,
           "q_lora_rank": config.q_lora_rank, "kv_lora_rank": config.kv_lora_rank,
           "qk_nope_head_dim": config.qk_nope_dim, "qk_rope_head_dim": config.qk_rope_dim,
           "v_head_dim": config.v_head_dim, "n_routed_experts": config.n_routed_experts,
           "n_shared_experts": config.n_shared_experts, "num_experts_per_tok": config.experts_per_token,
           "moe_intermediate_size": config.moe_d_ff, "first_k_dense_replace": config.first_dense_layers,
           "routed_scaling_factor": config.routed_scaling, "n_group": config.n_group, "topk_group": config.topk_group}
    if config.family == "deepseek_v3":
        return {**out, "norm_topk_prob": config.norm_topk_prob, "rope_interleave": config.rope_interleave,
                "num_nextn_predict_layers": 0}      # the multi-token-prediction layer is not part of decoding
    return {**out, "topk_method": config.router_groups}


@dataclass(frozen=True)
class HFWriting:
    """How one family goes out: its transformers model_type and class, its config.json keys, and the prefix
    of its base model's weights where that is not the weight table's own."""

    model_type: str
    architecture: str
    keys: Callable[[object], dict]
    prefix: str = ""


# Keyed by ModelConfig.family, the name of the model's row in families.FAMILIES.
WRITINGS = {
    "llama": HFWriting("llama", "LlamaForCausalLM", _llama_keys),
    "mistral": HFWriting("mistral", "MistralForCausalLM", _mistral_keys),
    "qwen2": HFWriting("qwen2", "Qwen2ForCausalLM", _qwen_keys),
    "qwen3": HFWriting("qwen3", "Qwen3ForCausalLM", _qwen_keys),
    "gpt2": HFWriting("gpt2", "GPT2LMHeadModel", _gpt2_keys, prefix="transformer."),
    "phi3": HFWriting("phi3", "Phi3ForCausalLM", _phi3_keys),
    "gemma": HFWriting("gemma", "GemmaForCausalLM", _llama_keys),
    "gemma2": HFWriting("gemma2", "Gemma2ForCausalLM", _gemma2_keys),
    "gemma3": HFWriting("gemma3_text", "Gemma3ForCausalLM", _gemma3_keys),
    "deepseek_v2": HFWriting("deepseek_v2", "DeepseekV2ForCausalLM", _deepseek_keys),
    "deepseek_v3": HFWriting("deepseek_v3", "DeepseekV3ForCausalLM", _deepseek_keys),
}


def writing_of(loaded) -> HFWriting:
    """The family's way out, or the one sentence saying which families save_hf writes."""
    family = getattr(loaded.config, "family", None) or loaded.info.family
    writing = WRITINGS.get(family)
    if writing is None:
        raise ExplorerError(f"save_hf writes {', '.join(WRITINGS)} models; {loaded.name} is {family}")
    return writing


def hf_config(config) -> dict:
    """The transformers config dict of a decoder's ModelConfig."""
    writing = WRITINGS[config.family]
    return {"model_type": writing.model_type, "architectures": [writing.architecture], **writing.keys(config)}


def check_round_trip(loaded, config_json: dict) -> None:
    """ExplorerError unless the engine reads `config_json` back as the model's own ModelConfig: a folder whose
    config says another model (a converted attention, a changed scale) is never written."""
    from explorer.core.config import ModelConfig

    try:
        again = ModelConfig.from_hf(json.loads(json.dumps(config_json)))
    except ExplorerError as error:
        raise ExplorerError(f"save_hf cannot write {loaded.name}: its config.json would not load ({error})") from None
    ours = loaded.config
    for field in fields(ours):
        if getattr(again, field.name) != getattr(ours, field.name):
            raise ExplorerError(
                f"save_hf cannot write {loaded.name}: config.json cannot say its {field.name} "
                f"({getattr(ours, field.name)!r}; a {config_json['model_type']} config gives "
                f"{getattr(again, field.name)!r})")


def hf_tensors(loaded) -> dict[str, torch.Tensor]:
    """The model's weights under their transformers names, contiguous, on the CPU. ExplorerError if a weight
    of the model has no place in the family's table (a model converted to another attention, say)."""
    from explorer.core.families import FAMILIES

    config, writing = loaded.config, writing_of(loaded)
    ours = {name: tensor.detach().to("cpu") for name, tensor in loaded.model.named_parameters()}
    out, used = {}, set()
    for hf_name, (our_names, *convert) in FAMILIES[config.family].weight_table().items():
        for fill in _fills(hf_name, config.n_layers):
            names = tuple(name.format(**fill) for name in (our_names if isinstance(our_names, tuple) else (our_names,)))
            if all(name in ours for name in names):
                parts = tuple(ours[name] for name in names)
                out[hf_name.format(**fill)] = _inverse(convert[0], parts) if convert else parts[0].contiguous().clone()
                used.update(names)
    unplaced = sorted(set(ours) - used)
    if unplaced:
        raise ExplorerError(f"save_hf cannot write {loaded.name}: its weight {unplaced[0]} has no place in a "
                            f"{writing.model_type} checkpoint")
    if config.tie_embeddings:
        out.pop("lm_head.weight", None)
    return {name if name.startswith("lm_head") else writing.prefix + name: tensor for name, tensor in out.items()}


def _fills(hf_name: str, n_layers: int) -> list[dict]:
    """Every (layer, weight|bias) a table row's name pattern stands for."""
    layers = range(n_layers) if "{i}" in hf_name else [None]
    parts = ("weight", "bias") if "{p}" in hf_name else [None]
    return [dict(i=layer, p=part) for layer in layers for part in parts]


def _inverse(convert: Callable, parts: tuple[torch.Tensor, ...]) -> torch.Tensor:
    """The checkpoint tensor that the table's load-time conversion `convert` turns into `parts`.

    The conversions are splits and transposes (GPT-2's Conv1D (in, out) with Q|K|V side by side, a fused
    gate|up, Phi-3's fused qkv), so the inverse is one of: the part as is or transposed, or the parts
    concatenated along one axis, each transposed or not. Each candidate is converted again and kept only
    if it gives `parts` back exactly, so a wrong guess can never be written."""
    for candidate in _candidates(parts):
        try:
            back = convert(candidate)
        except (RuntimeError, IndexError):
            continue
        if len(back) == len(parts) and all(b.shape == p.shape and torch.equal(b, p) for b, p in zip(back, parts)):
            return candidate.contiguous().clone()
    raise ExplorerError(f"save_hf cannot invert the weight conversion {convert.__name__}")


def _candidates(parts: tuple[torch.Tensor, ...]):
    for transposed in (False, True):
        if transposed and parts[0].dim() != 2:
            continue
        turned = [part.t() if transposed else part for part in parts]
        if len(turned) == 1:
            yield turned[0]
        else:
            for dim in range(turned[0].dim()):
                yield torch.cat(turned, dim=dim)


def save_hf(loaded, folder: str | Path) -> Path:
    """Write `loaded` to `folder` (created if needed) as config.json, model.safetensors and tokenizer.json."""
    from safetensors.torch import save_file

    folder = Path(folder)
    tensors = hf_tensors(loaded)
    config_json = hf_config(loaded.config)
    check_round_trip(loaded, config_json)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "config.json").write_text(json.dumps(config_json, indent=2))
        save_file(tensors, str(folder / "model.safetensors"), metadata={"format": "pt"})
        if loaded.tokenizer is not None:
            write_tokenizer(loaded.tokenizer, folder)
    except OSError as error:
        raise ExplorerError(f"cannot write {folder}: {error.strerror or error}") from None
    return folder


def write_tokenizer(tokenizer, folder: Path) -> None:
    """tokenizer.json and a tokenizer_config.json naming BOS and EOS. Where the engine puts BOS before a
    prompt itself (TextTokenizer.add_bos), the written tokenizer's post-processor does, so that
    transformers' tokenizer(text) gives the ids the engine runs."""
    from tokenizers import Tokenizer
    from tokenizers import processors
    from tokenizers.processors import TemplateProcessing

    written = Tokenizer.from_str(tokenizer.tokenizer.to_str())
    bos = tokenizer.bos_id
    if tokenizer.add_bos and bos is not None and written.encode("a").ids[:1] != [bos]:
        token = written.id_to_token(bos)
        template = TemplateProcessing(single=f"{token} $A", pair=f"{token} $A {token} $B",
                                      special_tokens=[(token, bos)])
        kept = written.post_processor        # e.g. byte-level offsets: BOS comes after it
        written.post_processor = template if kept is None else processors.Sequence([kept, template])
    (folder / "tokenizer.json").write_text(written.to_str())
    special = {key: written.id_to_token(token_id) for key, token_id in
               (("bos_token", bos), ("eos_token", tokenizer.eos_id)) if token_id is not None}
    (folder / "tokenizer_config.json").write_text(json.dumps(
        {"tokenizer_class": "PreTrainedTokenizerFast", **special}, indent=2))
