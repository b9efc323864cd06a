"""A Hugging Face model folder's files other than the weights' data: config.json, the weight files, the card.

Torch-free, so that listing models (model_summary, the store) and the KV table read folders
without loading the engine. The config may not ask for custom code; pickle checkpoints are
refused, never unpickled.
"""
from __future__ import annotations

import re
from pathlib import Path

from explorer.core.errors import ModelLoadError, UnsupportedModelError
from explorer.core.loaders.json_file import read_json
from explorer.core.loaders.model_file import CONVERT_HINT, PICKLE_SUFFIXES, is_regular, open_regular


def refuse_custom_code(config: dict, path: Path) -> None:
    """Refuse configs that would run code shipped with the model."""
    if config.get("trust_remote_code") or config.get("auto_map"):
        names = ", ".join(sorted(str(v) for v in (config.get("auto_map") or {}).values())) or "trust_remote_code"
        raise UnsupportedModelError(
            f"{path} asks to run custom code shipped with the model ({names});"
            " Transformer Explorer runs only its own code.")


def read_config(path: Path) -> dict:
    """The config dict of a config file (a folder's config.json, as loaders.open_model named it)."""
    config = read_json(path)
    refuse_custom_code(config, path)
    return config


def weight_files(folder: Path) -> list[Path]:
    """The safetensors files of a folder (sharded via the index, else all); pickles only -> refused."""
    index = folder / "model.safetensors.index.json"
    if index.exists():
        weight_map = read_json(index).get("weight_map")
        if not isinstance(weight_map, dict) or not weight_map:
            raise ModelLoadError(f"{index} has no weight_map.")
        files = [folder / name for name in sorted(set(map(str, weight_map.values())))]
        for file in files:
            if file.parent != folder or not file.exists():
                raise ModelLoadError(f"{index} names the shard {file.name}, which is missing from {folder}.")
        return files
    files = sorted(folder.glob("*.safetensors"))
    if files:
        return files
    pickles = sorted(p.name for p in folder.iterdir() if p.suffix in PICKLE_SUFFIXES)
    if pickles:
        raise UnsupportedModelError(
            f"{folder} holds only pickle checkpoints ({', '.join(pickles)}),"
            f" which are never unpickled here; {CONVERT_HINT}.")
    raise ModelLoadError(f"{folder} has no *.safetensors weights.")


def read_license(folder: Path) -> str | None:
    """The `license:` of the model card's front matter, if any."""
    card = folder / "README.md"
    if not is_regular(card):
        return None
    try:
        with open_regular(card) as handle:
            text = handle.read(4000).decode("utf-8", errors="replace")
    except (OSError, ModelLoadError):
        return None
    match = re.search(r"^license:\s*(\S+)", text, re.MULTILINE)
    return match.group(1) if match else None
