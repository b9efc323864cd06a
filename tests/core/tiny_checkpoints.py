"""Tiny checkpoints written by the tests: HF folders (safetensors + tokenizer.json) and GGUF files.

Written without transformers so that the loaders are checked against files whose
every byte the test chose. The GGUF writer does what llama.cpp's convert_hf_to_gguf
does: rename tensors, permute W^Q/W^K rows for llama, add 1 to Gemma 3's norms.
"""
from __future__ import annotations

import json
from pathlib import Path

import gguf
import numpy as np
import torch
from safetensors.torch import save_file
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

from explorer.core.families import gguf_row
from explorer.core.loaders.gguf import permute_rows

CORPUS = [
    "The capital of France is Paris. The capital of Italy is Rome.",
    "To be, or not to be, that is the question:\nWhether 'tis nobler in the mind to suffer",
    "def main():\n    return 42  # numbers 0123456789",
    "naïve café résumé — über straße 東京 😀 👍",
]
LLAMA_CONFIG = dict(model_type="llama", architectures=["LlamaForCausalLM"], hidden_size=32, intermediate_size=48,
                    num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=8,
                    rms_norm_eps=1e-5, rope_theta=10000.0, max_position_embeddings=64, hidden_act="silu",
                    tie_word_embeddings=False, bos_token_id=0, eos_token_id=0)


def byte_level_tokenizer(vocab_size: int = 320) -> Tokenizer:
    """A GPT-2-style byte-level BPE trained on CORPUS, with <|endoftext|> as id 0."""
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=["<|endoftext|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tokenizer.train_from_iterator(CORPUS * 4, trainer)
    return tokenizer


def llama_tensors(config: dict, seed: int = 0) -> dict[str, torch.Tensor]:
    """Random float32 weights in HF LlamaForCausalLM names."""
    generator = torch.Generator().manual_seed(seed)
    d, f, v = config["hidden_size"], config["intermediate_size"], config["vocab_size"]
    q_rows = config["num_attention_heads"] * config["head_dim"]
    kv_rows = config["num_key_value_heads"] * config["head_dim"]
    shapes = {"model.embed_tokens.weight": (v, d), "model.norm.weight": (d,)}
    if not config.get("tie_word_embeddings"):
        shapes["lm_head.weight"] = (v, d)
    for i in range(config["num_hidden_layers"]):
        p = f"model.layers.{i}."
        shapes.update({
            p + "input_layernorm.weight": (d,), p + "post_attention_layernorm.weight": (d,),
            p + "self_attn.q_proj.weight": (q_rows, d), p + "self_attn.k_proj.weight": (kv_rows, d),
            p + "self_attn.v_proj.weight": (kv_rows, d), p + "self_attn.o_proj.weight": (d, q_rows),
            p + "mlp.gate_proj.weight": (f, d), p + "mlp.up_proj.weight": (f, d), p + "mlp.down_proj.weight": (d, f),
        })
    return {name: 0.2 * torch.randn(shape, generator=generator) for name, shape in shapes.items()}


def write_hf_folder(folder: Path, config: dict | None = None, seed: int = 0, shards: int = 1,
                    tokenizer: Tokenizer | None = None) -> tuple[dict, dict[str, torch.Tensor]]:
    """A llama folder: config.json, model.safetensors (or shards + index), tokenizer.json."""
    folder.mkdir(parents=True, exist_ok=True)
    tokenizer = tokenizer or byte_level_tokenizer()
    config = dict(config or LLAMA_CONFIG, vocab_size=tokenizer.get_vocab_size())
    tensors = llama_tensors(config, seed)
    (folder / "config.json").write_text(json.dumps(config))
    tokenizer.save(str(folder / "tokenizer.json"))
    if shards == 1:
        save_file(tensors, str(folder / "model.safetensors"))
        return config, tensors
    names = sorted(tensors)
    weight_map = {}
    for shard in range(shards):
        file = f"model-{shard + 1:05d}-of-{shards:05d}.safetensors"
        part = {n: tensors[n] for n in names[shard::shards]}
        save_file(part, str(folder / file))
        weight_map.update({n: file for n in part})
    (folder / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))
    return config, tensors


def gguf_name(arch: str, hf_name: str) -> str:
    for pattern, target in gguf_row(arch).gguf_weights.items():
        parts = target.split("{i}")
        if len(parts) == 1 and target == hf_name:
            return pattern
        if len(parts) == 2 and hf_name.startswith(parts[0]) and hf_name.endswith(parts[1]):
            layer = hf_name[len(parts[0]):len(hf_name) - len(parts[1])]
            if layer.isdigit():
                return pattern.format(i=layer)
    raise KeyError(hf_name)


def _add_byte_level_vocab(writer: gguf.GGUFWriter, tokenizer: Tokenizer) -> None:
    model = json.loads(tokenizer.to_str())["model"]
    tokens = [t for t, _ in sorted(model["vocab"].items(), key=lambda item: item[1])]
    special = {t.content for t in tokenizer.get_added_tokens_decoder().values() if t.special}
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("gpt2")
    writer.add_token_list(tokens)
    writer.add_token_types([3 if t in special else 1 for t in tokens])
    writer.add_token_merges([m if isinstance(m, str) else " ".join(m) for m in model["merges"]])
    writer.add_bos_token_id(0)
    writer.add_eos_token_id(0)
    writer.add_add_bos_token(False)


def gguf_tensor(weight: torch.Tensor, quant: gguf.GGMLQuantizationType):
    array = weight.numpy().astype(np.float32)
    if quant == gguf.GGMLQuantizationType.F32:
        return array, None
    if quant == gguf.GGMLQuantizationType.F16:
        return array.astype(np.float16), None
    return gguf.quants.quantize(array, quant), quant


def gguf_writer(path: Path, architecture: str, config: dict) -> gguf.GGUFWriter:
    """A GGUF writer with the block, context, width and head counts every architecture stores."""
    writer = gguf.GGUFWriter(str(path), architecture)
    writer.add_block_count(config["num_hidden_layers"])
    writer.add_context_length(config["max_position_embeddings"])
    writer.add_embedding_length(config["hidden_size"])
    writer.add_feed_forward_length(config["intermediate_size"])
    writer.add_head_count(config["num_attention_heads"])
    writer.add_head_count_kv(config["num_key_value_heads"])
    return writer


def write_llama_gguf(path: Path, config: dict, tensors: dict[str, torch.Tensor], tokenizer: Tokenizer,
                     quant: dict[str, gguf.GGMLQuantizationType] | None = None) -> None:
    """What convert_hf_to_gguf writes for a llama model: llama.* keys, renamed and Q/K-permuted tensors."""
    writer = gguf_writer(path, "llama", config)
    writer.add_layer_norm_rms_eps(config["rms_norm_eps"])
    writer.add_rope_freq_base(config["rope_theta"])
    writer.add_rope_dimension_count(config["head_dim"])
    _add_byte_level_vocab(writer, tokenizer)
    for name, weight in tensors.items():
        if name.endswith("q_proj.weight"):
            weight = permute_rows(weight, config["num_attention_heads"])
        elif name.endswith("k_proj.weight"):
            weight = permute_rows(weight, config["num_key_value_heads"])
        array, raw = gguf_tensor(weight, (quant or {}).get(name, gguf.GGMLQuantizationType.F32))
        writer.add_tensor(gguf_name("llama", name), array, raw_dtype=raw)  # quantized: shape in bytes
    _finish(writer)


def _finish(writer: gguf.GGUFWriter) -> None:
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


GEMMA3_DIMS = dict(hidden_size=32, intermediate_size=48, num_hidden_layers=6, num_attention_heads=4,
                   num_key_value_heads=1, head_dim=16, rms_norm_eps=1e-6, rope_theta=1_000_000.0,
                   max_position_embeddings=128, sliding_window=8)
SPM_PIECES = ["▁", "h", "e", "l", "o", "w", "r", "d", "he", "ll", "hell", "hello", "▁hello", "▁w", "or", "▁wor", "ld",
              "▁world", "!", "<start_of_turn>"]


def sentencepiece_vocab() -> tuple[list[str], list[float], list[int]]:
    """A Gemma-like vocabulary: <pad> <eos> <bos> <unk>, 256 byte pieces, then pieces scored by merge order."""
    tokens = ["<pad>", "<eos>", "<bos>", "<unk>"] + [f"<0x{b:02X}>" for b in range(256)] + SPM_PIECES
    types = [3, 3, 3, 2] + [6] * 256 + [1] * (len(SPM_PIECES) - 1) + [3]
    scores = [0.0] * 260 + [-float(i) for i in range(len(SPM_PIECES))]
    return tokens, scores, types


def gemma3_tensors(vocab: int, seed: int = 0) -> dict[str, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    c = GEMMA3_DIMS
    d, f, hd = c["hidden_size"], c["intermediate_size"], c["head_dim"]
    shapes = {"model.embed_tokens.weight": (vocab, d), "model.norm.weight": (d,)}
    for i in range(c["num_hidden_layers"]):
        p = f"model.layers.{i}."
        for norm in ("input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm",
                     "post_feedforward_layernorm"):
            shapes[p + norm + ".weight"] = (d,)
        shapes.update({
            p + "self_attn.q_norm.weight": (hd,), p + "self_attn.k_norm.weight": (hd,),
            p + "self_attn.q_proj.weight": (c["num_attention_heads"] * hd, d),
            p + "self_attn.k_proj.weight": (c["num_key_value_heads"] * hd, d),
            p + "self_attn.v_proj.weight": (c["num_key_value_heads"] * hd, d),
            p + "self_attn.o_proj.weight": (d, c["num_attention_heads"] * hd),
            p + "mlp.gate_proj.weight": (f, d), p + "mlp.up_proj.weight": (f, d), p + "mlp.down_proj.weight": (d, f),
        })
    return {name: 0.2 * torch.randn(shape, generator=generator) for name, shape in shapes.items()}


def write_gemma3_gguf(path: Path, seed: int = 0) -> dict[str, torch.Tensor]:
    """What convert_hf_to_gguf writes for Gemma 3 text: gemma3.* keys, norms stored as 1 + w, no Q/K permutation."""
    tokens, scores, types = sentencepiece_vocab()
    tensors = gemma3_tensors(len(tokens), seed)
    c = GEMMA3_DIMS
    writer = gguf_writer(path, "gemma3", c)
    writer.add_key_length(c["head_dim"])
    writer.add_value_length(c["head_dim"])
    writer.add_layer_norm_rms_eps(c["rms_norm_eps"])
    writer.add_rope_freq_base(c["rope_theta"])
    writer.add_sliding_window(c["sliding_window"])
    writer.add_tokenizer_model("llama")
    writer.add_tokenizer_pre("default")
    writer.add_token_list(tokens)
    writer.add_token_scores(scores)
    writer.add_token_types(types)
    writer.add_bos_token_id(2)
    writer.add_eos_token_id(1)
    writer.add_unk_token_id(3)
    writer.add_add_bos_token(True)
    writer.add_add_space_prefix(False) if hasattr(writer, "add_add_space_prefix") else \
        writer.add_bool("tokenizer.ggml.add_space_prefix", False)
    for name, weight in tensors.items():
        stored = weight + 1.0 if name.endswith("norm.weight") else weight
        writer.add_tensor(gguf_name("gemma3", name), stored.numpy().astype(np.float32))
    _finish(writer)
    return tensors
