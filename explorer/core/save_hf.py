"""A loaded model written back as a Hugging Face folder: config.json, model.safetensors, tokenizer.json.

The weights are the engine's own (a GGUF file's already dequantized and un-permuted), named by
the inverse of the family's weight table (families.ModelFamily.weights), so transformers (and what reads through
it) loads the folder without converting anything again. Dense decoder families only: Llama,
Mistral, Qwen2, Qwen3 and GPT-2.
"""
from __future__ import annotations

import json
from pathlib import Path

import torch

from explorer.core.errors import ExplorerError

ARCHITECTURES = {"llama": "LlamaForCausalLM", "mistral": "MistralForCausalLM", "qwen2": "Qwen2ForCausalLM",
                 "qwen3": "Qwen3ForCausalLM", "gpt2": "GPT2LMHeadModel"}


def rope_config(rope) -> dict:
    """rope_theta and, where the frequencies are scaled, rope_scaling, as transformers' configs write them."""
    out = {"rope_theta": rope.theta}
    if rope.kind == "llama3":
        out["rope_scaling"] = {"rope_type": "llama3", "factor": rope.factor, "low_freq_factor": rope.low_freq_factor,
                               "high_freq_factor": rope.high_freq_factor,
                               "original_max_position_embeddings": rope.original_max_positions}
    elif rope.kind == "linear":
        out["rope_scaling"] = {"rope_type": "linear", "factor": rope.factor}
    elif rope.kind != "default":
        raise ExplorerError(f"rope scaling {rope.kind!r} is not written back by save_hf")
    return out


def hf_config(config) -> dict:
    """The transformers config dict of a dense ModelConfig."""
    if config.family == "gpt2":
        return {"model_type": "gpt2", "architectures": [ARCHITECTURES["gpt2"]], "vocab_size": config.vocab_size,
                "n_embd": config.d_model, "n_layer": config.n_layers, "n_head": config.n_heads,
                "n_inner": config.d_ff, "n_positions": config.max_positions, "layer_norm_epsilon": config.norm_eps,
                "activation_function": config.activation, "tie_word_embeddings": config.tie_embeddings,
                "scale_attn_by_inverse_layer_idx": config.attn_scale_by_layer}
    out = {"model_type": config.family, "architectures": [ARCHITECTURES[config.family]],
           "vocab_size": config.vocab_size, "hidden_size": config.d_model, "intermediate_size": config.d_ff,
           "num_hidden_layers": config.n_layers, "num_attention_heads": config.n_heads,
           "num_key_value_heads": config.n_kv_heads, "head_dim": config.d_head,
           "max_position_embeddings": config.max_positions, "rms_norm_eps": config.norm_eps,
           "hidden_act": config.activation, "tie_word_embeddings": config.tie_embeddings,
           "attention_bias": config.qkv_bias, "mlp_bias": config.mlp_bias,
           "bos_token_id": config.bos_token_id, "eos_token_id": config.eos_token_id, **rope_config(config.rope)}
    if config.sliding_window and config.family == "mistral":
        out["sliding_window"] = config.sliding_window
    return out


def hf_tensors(loaded) -> dict[str, torch.Tensor]:
    """The model's weights under their transformers names, contiguous, on the CPU."""
    from explorer.core.families import FAMILIES

    config = loaded.config
    if config.family not in ARCHITECTURES:
        raise ExplorerError(f"save_hf writes {', '.join(ARCHITECTURES)} models; {loaded.name} is {config.family}")
    ours = dict(loaded.model.named_parameters())
    out = {}
    for hf_name, (our_name, *convert) in FAMILIES[config.family].weight_table().items():
        for layer in range(config.n_layers) if "{i}" in hf_name else [None]:
            for part in ("weight", "bias") if "{p}" in hf_name else [None]:
                out.update(_inverse(ours, hf_name, our_name, convert, layer, part))
    if config.tie_embeddings:
        out.pop("lm_head.weight", None)
    if config.family == "gpt2":
        out = {f"transformer.{name}" if not name.startswith("lm_head") else name: value for name, value in out.items()}
    return out


def _inverse(ours: dict, hf_name: str, our_name, convert: list, layer, part) -> dict[str, torch.Tensor]:
    """{hf name: tensor} of one table row, where the model has the weights it names."""
    fill = dict(i=layer, p=part)
    names = our_name if isinstance(our_name, tuple) else (our_name,)
    found = [ours.get(name.format(**fill)) for name in names]
    if any(tensor is None for tensor in found):
        return {}
    tensors = [tensor.detach().to("cpu").contiguous() for tensor in found]
    if convert:                                   # GPT-2's Conv1D stores (in, out); Q|K|V side by side
        tensors = [t.t().contiguous() if t.dim() == 2 else t for t in tensors]
        tensor = torch.cat(tensors, dim=-1) if len(tensors) > 1 else tensors[0]
    else:
        tensor = tensors[0]
    return {hf_name.format(**fill): tensor.contiguous().clone()}


def save_hf(loaded, folder: str | Path) -> Path:
    """Write `loaded` to `folder` (created if needed) as config.json, model.safetensors and tokenizer.json."""
    from safetensors.torch import save_file

    folder = Path(folder)
    tensors = hf_tensors(loaded)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "config.json").write_text(json.dumps(hf_config(loaded.config), indent=2))
        save_file(tensors, str(folder / "model.safetensors"), metadata={"format": "pt"})
        tokenizer = loaded.tokenizer
        if tokenizer is not None:
            (folder / "tokenizer.json").write_text(tokenizer.tokenizer.to_str())
            special = {key: tokenizer.tokenizer.id_to_token(token_id) for key, token_id in
                       (("bos_token", tokenizer.bos_id), ("eos_token", tokenizer.eos_id)) if token_id is not None}
            (folder / "tokenizer_config.json").write_text(json.dumps(
                {"tokenizer_class": "PreTrainedTokenizerFast", **special}, indent=2))
    except OSError as error:
        raise ExplorerError(f"cannot write {folder}: {error.strerror or error}") from None
    return folder
