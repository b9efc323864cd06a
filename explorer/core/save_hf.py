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
from dataclasses import fields
from pathlib import Path

import torch
from safetensors.torch import save_file
from tokenizers import Tokenizer, processors
from tokenizers.processors import TemplateProcessing

from explorer.core.config import ModelConfig
from explorer.core.errors import ExplorerError
from explorer.core.families import FAMILIES, row_named
from explorer.core.files import write_folder
from explorer.core.hf_keys import HFWriting
from explorer.core.weight_names import Layout
from explorer.core.weights import join, rule_of, split


def writing_of(loaded) -> HFWriting:
    """The family row's way out (families.ModelFamily.writing), or the one sentence saying which families
    save_hf writes."""
    family = getattr(loaded.config, "family", None) or loaded.info.family
    row = row_named(family)
    if row is None or row.writing is None:
        written = ", ".join(name for name, row in FAMILIES.items() if row.writing)
        raise ExplorerError(f"save_hf writes {written} models; {loaded.name} is {family}")
    return row.writing


def hf_config(config) -> dict:
    """The transformers config dict of a decoder's ModelConfig."""
    writing = FAMILIES[config.family].writing
    return {"model_type": writing.model_type, "architectures": [writing.architecture], **writing.keys(config)}


def check_round_trip(loaded, config_json: dict) -> None:
    """ExplorerError unless the engine reads `config_json` back as the model's own ModelConfig: a folder whose
    config says another model (a converted attention, a changed scale) is never written."""
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
    config, writing = loaded.config, writing_of(loaded)
    ours = {name: tensor.detach().to("cpu") for name, tensor in loaded.model.named_parameters()}
    out, used = {}, set()
    for hf_name, spec in FAMILIES[config.family].weights.items():
        our_names, layout = rule_of(spec)
        for fill in _fills(hf_name, config.n_layers):
            names = tuple(name.format(**fill) for name in our_names)
            if all(name in ours for name in names):
                out[hf_name.format(**fill)] = _joined(layout, tuple(ours[name] for name in names), hf_name)
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


def _joined(layout: Layout, parts: tuple[torch.Tensor, ...], hf_name: str) -> torch.Tensor:
    """The checkpoint tensor the table's layout splits into `parts`, joined by weights.join, and split again
    to check that it gives `parts` back exactly (a model whose parts no longer fit is refused rather than
    written wrong)."""
    try:
        joined = join(layout, parts)
        back = split(layout, joined)
    except (RuntimeError, IndexError):
        back = ()
    if len(back) != len(parts) or not all(b.shape == p.shape and torch.equal(b, p) for b, p in zip(back, parts)):
        raise ExplorerError(f"save_hf cannot write the weights of {hf_name}: its parts do not join into one "
                            "checkpoint tensor")
    return joined.contiguous().clone()


def save_hf(loaded, folder: str | Path) -> Path:
    """Write `loaded` to `folder` (created if needed, refused if it holds files) as config.json, model.safetensors
    and tokenizer.json, whole or not at all (files.write_folder)."""
    folder = Path(folder)
    tensors = hf_tensors(loaded)
    config_json = hf_config(loaded.config)
    check_round_trip(loaded, config_json)
    def write(into: Path) -> None:
        (into / "config.json").write_text(json.dumps(config_json, indent=2))
        save_file(tensors, str(into / "model.safetensors"), metadata={"format": "pt"})
        if loaded.tokenizer is not None:
            write_tokenizer(loaded.tokenizer, into)
    return write_folder(folder, write, "the model")


def write_tokenizer(tokenizer, folder: Path) -> None:
    """tokenizer.json and a tokenizer_config.json naming BOS and EOS. Where the engine puts BOS before a
    prompt itself (TextTokenizer.add_bos), the written tokenizer's post-processor does, so that
    transformers' tokenizer(text) gives the ids the engine runs."""
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
