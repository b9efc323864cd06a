"""Open a Hugging Face model folder: config.json, *.safetensors (single or sharded), tokenizer.json.

Every file is untrusted. The config may not ask for custom code; safetensors
headers are checked (JSON, known dtypes, offsets inside the file and consistent
with each shape) before a byte of data is read, then memory-mapped; pickle
checkpoints are refused, never unpickled.
"""
from __future__ import annotations

import json
import mmap
import re
import struct
from pathlib import Path

import torch
import tokenizers

from explorer.core.errors import ModelLoadError, UnsupportedModelError
from explorer.core.loaders.json_file import read_json
from explorer.core.loaders.safetensors_header import read_safetensors_header
from explorer.core.tokens import TextTokenizer

PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".ckpt")
CONVERT_HINT = ("convert it to safetensors in an environment you trust, e.g. "
                "safetensors.torch.save_file(torch.load(FILE, weights_only=True), 'model.safetensors')")


def refuse_custom_code(config: dict, path: Path) -> None:
    """Refuse configs that would run code shipped with the model."""
    if config.get("trust_remote_code") or config.get("auto_map"):
        names = ", ".join(sorted(str(v) for v in (config.get("auto_map") or {}).values())) or "trust_remote_code"
        raise UnsupportedModelError(
            f"{path} asks to run custom code shipped with the model ({names}); Transformer Explorer runs only its own code.")


def read_config(folder: Path) -> dict:
    path = folder / "config.json"
    if not path.is_file():
        raise ModelLoadError(f"{folder} has no config.json, so it is not a Hugging Face model folder.")
    config = read_json(path)
    refuse_custom_code(config, path)
    return config


def weight_files(folder: Path) -> list[Path]:
    """The safetensors files of a folder (sharded via the index, else all); pickles only -> refused."""
    index = folder / "model.safetensors.index.json"
    if index.is_file():
        weight_map = read_json(index).get("weight_map")
        if not isinstance(weight_map, dict) or not weight_map:
            raise ModelLoadError(f"{index} has no weight_map.")
        files = [folder / name for name in sorted(set(map(str, weight_map.values())))]
        for file in files:
            if file.parent != folder or not file.is_file():
                raise ModelLoadError(f"{index} names the shard {file.name}, which is missing from {folder}.")
        return files
    files = sorted(folder.glob("*.safetensors"))
    if files:
        return files
    pickles = sorted(p.name for p in folder.iterdir() if p.suffix in PICKLE_SUFFIXES)
    if pickles:
        raise UnsupportedModelError(
            f"{folder} holds only pickle checkpoints ({', '.join(pickles)}), which are never unpickled here; {CONVERT_HINT}.")
    raise ModelLoadError(f"{folder} has no *.safetensors weights.")


def read_safetensors(files: list[Path], progress=None) -> dict[str, torch.Tensor]:
    """All tensors of the given files, after checking each header; duplicate names are refused.

    Each file is memory-mapped once (copy-on-write, so nothing can write to it) and its tensors
    are views of that one mapping: the weights are the file's pages in the page cache, not a
    second copy in RAM, and tensors that lie one after another in the file stay adjacent
    (stacked.stack_rows then stacks them without copying).
    """
    tensors: dict[str, torch.Tensor] = {}
    for number, path in enumerate(files):
        header = read_safetensors_header(path)
        try:
            for name, tensor in mapped_tensors(path, header).items():
                if name in tensors:
                    raise ModelLoadError(f"{path} repeats the tensor {name} found in another shard.")
                tensors[name] = tensor
        except (RuntimeError, OSError, ValueError) as error:
            raise ModelLoadError(f"{path} is corrupt and cannot be read ({error}).") from None
        if progress is not None:
            progress((number + 1) / len(files), f"read {path.name}")
    return tensors


TORCH_DTYPES = {"F64": torch.float64, "F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16,
                "I64": torch.int64, "I32": torch.int32, "I16": torch.int16, "I8": torch.int8, "U8": torch.uint8,
                "BOOL": torch.bool, "F8_E4M3": torch.float8_e4m3fn, "F8_E5M2": torch.float8_e5m2}


def mapped_tensors(path: Path, header: dict) -> dict[str, torch.Tensor]:
    """The tensors of a checked safetensors file as views of one copy-on-write mapping of it."""
    entries = {name: entry for name, entry in header.items() if name != "__metadata__"}
    if not entries:
        return {}
    with path.open("rb") as handle:
        data_start = 8 + struct.unpack("<Q", handle.read(8))[0]
        mapping = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_COPY)
    file_bytes = torch.frombuffer(mapping, dtype=torch.uint8)             # one storage for the whole file
    out = {}
    for name, entry in entries.items():
        start, end = (data_start + int(offset) for offset in entry["data_offsets"])
        dtype, shape = TORCH_DTYPES[entry["dtype"]], [int(dim) for dim in entry["shape"]]
        raw = file_bytes[start:end]
        if start % max(1, dtype.itemsize):                                # unaligned: the one case that copies
            raw = raw.clone()
        out[name] = raw.view(dtype).view(shape)
    return out


def read_tokenizer(folder: Path, config: dict) -> TextTokenizer:
    path = folder / "tokenizer.json"
    if not path.is_file():
        raise ModelLoadError(
            f"{folder} has no tokenizer.json; the explorer needs the fast-tokenizer file next to the weights.")
    try:
        tokenizer = tokenizers.Tokenizer.from_file(str(path))
    except Exception as error:  # tokenizers raises a bare Exception for malformed files
        raise ModelLoadError(f"{path} is not a valid tokenizer file ({str(error).splitlines()[0][:120]}).") from None
    settings = read_json(folder / "tokenizer_config.json") if (folder / "tokenizer_config.json").is_file() else {}
    refuse_custom_code(settings, folder / "tokenizer_config.json")
    return TextTokenizer(
        tokenizer,
        add_bos=bool(settings.get("add_bos_token", False)),
        bos_id=_int_or_none(config.get("bos_token_id")),
        eos_id=_int_or_none(config.get("eos_token_id")),
    )


def _int_or_none(value) -> int | None:
    if isinstance(value, list):
        value = value[0] if value else None
    return int(value) if isinstance(value, int) else None


def read_license(folder: Path) -> str | None:
    """The `license:` of the model card's front matter, if any."""
    card = folder / "README.md"
    if not card.is_file():
        return None
    text = card.read_text(encoding="utf-8", errors="replace")[:4000]
    match = re.search(r"^license:\s*(\S+)", text, re.MULTILINE)
    return match.group(1) if match else None


def read_hf_folder(folder: str | Path, progress=None):
    """(hf_config, tensors, TextTokenizer, license) of a Hugging Face folder; errors name the file."""
    folder = Path(folder)
    config = read_config(folder)
    files = weight_files(folder)
    tokenizer = read_tokenizer(folder, config)
    tensors = read_safetensors(files, progress)
    return config, tensors, tokenizer, read_license(folder)
