"""A float32 copy of a pulled GGUF file's dequantized tensors, so that every load after the first is a memory map.

Dequantizing SmolLM2-135M's Q4_1 file with `gguf.quants` costs seconds on every
load (tens on a busy 2-core CPU), most of the app's cold start. The first load
writes the tensors it produced, already under their HF names and conventions, as
`<file>.gguf.f32.safetensors` beside the .gguf in the model store. Later loads
map that file copy-on-write: nothing is read before it is used and nothing is
ever written back. The copy records the GGUF's size and modification time and a
format version; when any differs, or the copy is damaged, it is stale and is
written again. Files outside the model store are never cached (we do not write
beside a person's own files), nor any when TRANSFORMER_EXPLORER_GGUF_CACHE=0.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np
import torch

from explorer.core.errors import ModelLoadError

VERSION = "1"
SUFFIX = ".f32.safetensors"
DISABLE_ENV = "TRANSFORMER_EXPLORER_GGUF_CACHE"


def cache_path(gguf_path: Path) -> Path | None:
    """Where the copy of `gguf_path` lives, or None when that file is not cached."""
    from explorer.core import store

    if os.environ.get(DISABLE_ENV, "1") == "0":
        return None
    path, home = Path(gguf_path).resolve(), store.home().resolve()
    return path.with_name(path.name + SUFFIX) if home in path.parents else None


def fingerprint(gguf_path: Path) -> dict[str, str]:
    """What the copy must have been made from: this file's size and mtime, in this format version."""
    stat = Path(gguf_path).stat()
    return {"source_size": str(stat.st_size), "source_mtime_ns": str(stat.st_mtime_ns), "cache_version": VERSION}


def load(gguf_path: Path, expected: dict[str, tuple[int, ...]]) -> dict[str, torch.Tensor] | None:
    """The cached tensors if a fresh copy holds exactly the `expected` names and shapes, else None."""
    from explorer.core.loaders.hf import read_safetensors_header

    path = cache_path(gguf_path)
    if path is None or not path.is_file():
        return None
    try:
        header = read_safetensors_header(path)
    except ModelLoadError:
        return None                                         # damaged: written again by the caller
    entries = {name: entry for name, entry in header.items() if name != "__metadata__"}
    if header.get("__metadata__") != fingerprint(gguf_path) or \
            {name: tuple(entry["shape"]) for name, entry in entries.items()} != expected or \
            any(entry["dtype"] != "F32" for entry in entries.values()):
        return None
    # Read straight into owned memory, one tensor at a time: matrix multiplies on memory-mapped
    # weights ran several times slower (0.9 s against 0.06 s per SmolLM2 token). Weights the model
    # stacks go into adjacent rows of one buffer (below); the others each own theirs.
    tensors = _stacked_destinations(entries)
    with path.open("rb", buffering=0) as handle:
        start = 8 + int.from_bytes(handle.read(8), "little")   # the data follow the 8-byte length and the header
        for name, entry in sorted(entries.items(), key=lambda item: item[1]["data_offsets"][0]):
            tensor = tensors.get(name)
            if tensor is None:
                tensor = torch.empty(entry["shape"], dtype=torch.float32)
            handle.seek(start + entry["data_offsets"][0])
            wanted = entry["data_offsets"][1] - entry["data_offsets"][0]
            if handle.readinto(tensor.numpy().reshape(-1).view(np.uint8)) != wanted:
                return None                                 # cut short: written again by the caller
            tensors[name] = tensor
    return tensors


# Weights the model multiplies as one stacked matrix (stacked.py): read into adjacent rows of one
# buffer, they are stacked already and the model takes them without copying (0.1 s and 278 MB for SmolLM2).
STACKED = (re.compile(r"(.*\.self_attn\.)(q|k|v)_proj\.weight$"), ("q", "k", "v")), \
          (re.compile(r"(.*\.mlp\.)(gate|up)_proj\.weight$"), ("gate", "up"))


def _stacked_destinations(entries: dict) -> dict[str, torch.Tensor]:
    """Empty row views of one buffer per group of weights the model stacks, by name."""
    groups: dict[tuple, dict[str, str]] = {}
    for name in entries:
        for pattern, order in STACKED:
            match = pattern.match(name)
            if match:
                groups.setdefault((match.group(1), order), {})[match.group(2)] = name
    destinations = {}
    for (_, order), members in groups.items():
        if set(members) != set(order):
            continue
        shapes = [entries[members[part]]["shape"] for part in order]
        if any(len(shape) != 2 or shape[1] != shapes[0][1] for shape in shapes):
            continue
        buffer = torch.empty(sum(shape[0] for shape in shapes), shapes[0][1], dtype=torch.float32)
        row = 0
        for part, shape in zip(order, shapes):
            destinations[members[part]] = buffer[row: row + shape[0]]
            row += shape[0]
    return destinations


def save(gguf_path: Path, tensors: dict[str, torch.Tensor]) -> Path | None:
    """Write the copy (atomically); a full disk or a read-only store only loses the speed-up."""
    from safetensors.torch import save_file

    path = cache_path(gguf_path)
    if path is None:
        return None
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        contiguous = {name: tensor.detach().to(torch.float32).contiguous() for name, tensor in tensors.items()}
        save_file(contiguous, str(temporary), metadata=fingerprint(gguf_path))
        os.replace(temporary, path)
    except (OSError, RuntimeError, ValueError):
        temporary.unlink(missing_ok=True)
        return None
    return path
