"""A float32 copy of a pulled GGUF file's dequantized tensors, so that every load after the first is a file read.

Dequantizing SmolLM2-135M's Q4_1 file with `gguf.quants` costs seconds on every
load (tens on a busy 2-core CPU), most of the app's cold start. The first load
writes the tensors it produced, already under their HF names and conventions, as
`<file>.gguf.f32.safetensors` beside the .gguf in the model store. Later loads
read that file into owned memory (gguf_copy, which can start before torch is
imported). The copy records the GGUF's size and modification time and a
format version; when any differs, or the copy is damaged, it is stale and is
written again. Files outside the model store are never cached (we do not write
beside a person's own files), nor any when TRANSFORMER_EXPLORER_GGUF_CACHE=0.
"""
from __future__ import annotations

import os
from pathlib import Path

import torch

from explorer.core.loaders import gguf_copy
from explorer.core.loaders.gguf_copy import VERSION, cache_path, fingerprint  # noqa: F401
from explorer.core.store import COPY_DISABLE_ENV as DISABLE_ENV  # noqa: F401
from explorer.core.store import COPY_SUFFIX as SUFFIX  # noqa: F401


def load(gguf_path: Path, expected: dict[str, tuple[int, ...]]) -> dict[str, torch.Tensor] | None:
    """The cached tensors if a fresh copy holds exactly the `expected` names and shapes, else None.

    Read into owned memory (gguf_copy, or taken from its read ahead): matrix multiplies on
    memory-mapped weights ran several times slower (0.9 s against 0.06 s per SmolLM2 token).
    Numpy buffers become tensors without a copy, a stacked group's as one buffer, so the model
    stacks the group without a torch.cat (it then stores it by columns once, stacked.by_columns).
    """
    path = cache_path(gguf_path)
    if path is None or not path.is_file():
        return None
    copy = gguf_copy.take(path) or gguf_copy.read(path)
    if copy is None:
        return None                                         # damaged or cut short: written again by the caller
    entries = {name: entry for name, entry in copy.header.items() if name != "__metadata__"}
    if copy.header.get("__metadata__") != fingerprint(gguf_path) or \
            {name: tuple(entry["shape"]) for name, entry in entries.items()} != expected:
        return None
    buffers = [torch.from_numpy(buffer) for buffer in copy.buffers]
    return {name: buffers[index] if first is None else buffers[index][first:end]
            for name, (index, first, end) in copy.parts.items()}


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
