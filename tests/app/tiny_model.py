"""A tiny random Llama with a tiny byte-level BPE tokenizer, saved as a Hugging Face folder.

The app tests open it through the real core (loader, engine, decoder), so what
they check is what a person would see. transformers only writes the folder.
"""
from __future__ import annotations

import json
from pathlib import Path

CORPUS = ["To be, or not to be, that is the question:", "Whether 'tis nobler in the mind to suffer",
          "The slings and arrows of outrageous fortune,", "Or to take arms against a sea of troubles"] * 4


def make_tokenizer(folder: Path):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=300, special_tokens=["<|endoftext|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tokenizer.train_from_iterator(CORPUS, trainer)
    tokenizer.save(str(folder / "tokenizer.json"))
    return tokenizer


def make_tiny_llama(folder: Path, seed: int = 0, n_layers: int = 2) -> Path:
    """Write config.json, model.safetensors and tokenizer.json for an `n_layers`-layer GQA Llama into `folder`."""
    import transformers

    folder.mkdir(parents=True, exist_ok=True)
    tokenizer = make_tokenizer(folder)
    config = transformers.LlamaConfig(vocab_size=tokenizer.get_vocab_size(), hidden_size=32, intermediate_size=64,
                                      num_hidden_layers=n_layers, num_attention_heads=4, num_key_value_heads=2,
                                      max_position_embeddings=64, tie_word_embeddings=False,
                                      bos_token_id=0, eos_token_id=0)
    return save_random_model(transformers.LlamaForCausalLM, config, folder, seed)


def save_random_model(model_class, config, folder: Path, seed: int = 0) -> Path:
    """Build `model_class(config)` with its weight matrices drawn from N(0, 0.3²) (seeded), and save it into `folder`
    beside its tokenizer.json, as a Hugging Face folder that transformers and the explorer both open."""
    import torch

    torch.manual_seed(seed)
    model = model_class(config)
    with torch.no_grad():                 # spread the weights so that choices differ between tokens
        for parameter in model.parameters():
            if parameter.dim() > 1:
                parameter.normal_(0.0, 0.3)
    model.save_pretrained(folder, safe_serialization=True)
    (folder / "tokenizer_config.json").write_text(json.dumps({"tokenizer_class": "PreTrainedTokenizerFast"}))
    return folder


def break_weights(folder: Path) -> Path:
    """Truncate the safetensors file: a download that stopped half way."""
    weights = folder / "model.safetensors"
    data = weights.read_bytes()
    weights.write_bytes(data[: len(data) // 2])
    return folder
