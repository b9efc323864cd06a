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
Both the copy and the built tokenizer saved beside it are written through
files.write_atomic: a full disk or an interrupted write leaves no part of a file
and no temporary file, only the speed-up lost.
"""
from __future__ import annotations

import json
from pathlib import Path

import safetensors.torch
import torch
from safetensors import SafetensorError

from explorer.core import files
from explorer.core.errors import ExplorerError
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


def save(gguf_path: Path, tensors: dict[str, torch.Tensor], progress=None) -> Path | None:
    """Write the copy through files.write_atomic; a full disk or a read-only store only loses the speed-up.
    `progress(share, text)` is called between pieces of WRITE_BYTES (it may raise to cancel: the partial file
    is removed); Gemma 3 270M's 1.1 GB took 8.4 s in one safetensors call with the bar still.

    A failed write (a full disk) is an OSError or a ValueError; either way write_atomic has removed the
    temporary file and the copy's path holds what it held before."""
    path = cache_path(gguf_path)
    if path is None:
        return None
    contiguous = {name: tensor.detach().to(torch.float32).contiguous() for name, tensor in tensors.items()}
    metadata = fingerprint(gguf_path)
    try:
        def write(temporary):               # looked up at the call: a test's full disk replaces write_safetensors
            write_safetensors(contiguous, temporary, metadata, progress)
        return files.write_atomic(path, write, "the float32 copy")
    except (ExplorerError, SafetensorError, RuntimeError, ValueError):
        return None


WRITE_BYTES = 1 << 26       # 64 MiB written between two calls of `progress` (tens of ms)


def write_safetensors(tensors: dict[str, torch.Tensor], target: str, metadata: dict, progress=None) -> None:
    """float32 `tensors` as a safetensors file, serialized by safetensors itself and written piece by piece, so
    that a progress can move and a Cancel be seen (safetensors.torch.save_file is one call of seconds)."""
    data = memoryview(safetensors.torch.save(tensors, metadata=metadata))
    with open(target, "wb") as handle:
        for first in range(0, len(data), WRITE_BYTES):
            handle.write(data[first:first + WRITE_BYTES])
            if progress is not None:
                progress(min(len(data), first + WRITE_BYTES) / len(data), "writing the float32 copy for next time")


def save_tokenizer(cache: Path, saved: dict) -> Path | None:
    """Write a built tokenizer (`saved`, JSON) beside the copy, atomically; a full disk only loses the speed-up."""
    try:
        return files.write_text_atomic(cache, json.dumps(saved), "the saved tokenizer")
    except ExplorerError:
        return None
