"""Reading the float32 copy of a pulled GGUF file (see gguf_cache) into numpy, without torch.

Torch-free, so the read can start before torch is imported: the app asks for the model it opens
at launch, and `prefetch` reads its copy in a thread of its own while the model thread is still
importing torch (about 2 s here). The read is a file read into owned memory with the GIL
released, so on a 2-core machine it costs the import nothing; the load then takes the buffers
(`take`) and hands them to torch without a copy. Weights the model multiplies as one stacked
matrix (stacked.py) are read into adjacent rows of one buffer, so the model takes them stacked.
"""
from __future__ import annotations

import re
import threading
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from explorer.core.errors import ModelLoadError
from explorer.core.loaders.model_file import open_regular
from explorer.core.loaders.safetensors_header import read_safetensors_header
from explorer.core.store import float32_copy_path as cache_path  # the store decides where copies live

VERSION = "1"

# Weights the model stacks, by name pattern and the order of their rows.
STACKED = (re.compile(r"(.*\.self_attn\.)(q|k|v)_proj\.weight$"), ("q", "k", "v")), \
          (re.compile(r"(.*\.mlp\.)(gate|up)_proj\.weight$"), ("gate", "up"))


def fingerprint(gguf_path: Path) -> dict[str, str]:
    """What the copy must have been made from: this file's size and mtime, in this format version."""
    stat = Path(gguf_path).stat()
    return {"source_size": str(stat.st_size), "source_mtime_ns": str(stat.st_mtime_ns), "cache_version": VERSION}


@dataclass(frozen=True)
class CopyData:
    """A copy's safetensors header and its tensors: `parts[name]` is (buffer index, first row, end row),
    rows None where the tensor is the whole buffer."""

    header: dict
    buffers: list[np.ndarray]
    parts: dict[str, tuple[int, int | None, int | None]]


def read(copy_path: Path, stopped: Callable[[], bool] = lambda: False) -> CopyData | None:
    """The copy's tensors, or None where it is missing, damaged or cut short (the caller writes it again), or
    once `stopped()` (asked between pieces of READ_BYTES: a read ahead dropped, or the app quitting)."""
    try:
        header = read_safetensors_header(copy_path)
    except ModelLoadError:
        return None
    entries = {name: entry for name, entry in header.items() if name != "__metadata__"}
    if any(entry["dtype"] != "F32" for entry in entries.values()):
        return None
    buffers, parts = _layout(entries)
    try:
        with open_regular(copy_path) as handle:                 # a FIFO put there is refused, never waited on
            start = 8 + int.from_bytes(handle.read(8), "little")   # the data follow the 8-byte length and the header
            for name, entry in sorted(entries.items(), key=lambda item: item[1]["data_offsets"][0]):
                index, first, end = parts[name]
                target = buffers[index] if first is None else buffers[index][first:end]
                handle.seek(start + entry["data_offsets"][0])
                wanted = entry["data_offsets"][1] - entry["data_offsets"][0]
                if not _read_into(handle, target.reshape(-1).view(np.uint8), wanted, stopped):
                    return None
    except (OSError, ModelLoadError):
        return None
    return CopyData(header, buffers, parts)


READ_BYTES = 1 << 26         # 64 MiB: a piece read between two looks at `stopped` (tens of ms from disk cache)


def _read_into(handle, target: np.ndarray, wanted: int, stopped: Callable[[], bool]) -> bool:
    """Fill `target` (wanted bytes) from `handle` piece by piece; False when cut short or stopped."""
    if target.size != wanted:
        return False
    for first in range(0, wanted, READ_BYTES):
        piece = target[first: first + READ_BYTES]
        if stopped() or handle.readinto(piece) != piece.size:
            return False
    return True


def _layout(entries: dict) -> tuple[list[np.ndarray], dict]:
    """Empty buffers for the copy's tensors: one per group of weights the model stacks (their rows
    adjacent, in the model's order), one per other tensor."""
    groups: dict[tuple, dict[str, str]] = {}
    for name in entries:
        for pattern, order in STACKED:
            match = pattern.match(name)
            if match:
                groups.setdefault((match.group(1), order), {})[match.group(2)] = name
    buffers: list[np.ndarray] = []
    parts: dict[str, tuple] = {}
    for (_, order), members in groups.items():
        shapes = [entries[members[part]]["shape"] for part in order] if set(members) == set(order) else []
        if not shapes or any(len(shape) != 2 or shape[1] != shapes[0][1] for shape in shapes):
            continue
        buffers.append(_empty((sum(shape[0] for shape in shapes), shapes[0][1])))
        row = 0
        for part, shape in zip(order, shapes):
            parts[members[part]] = (len(buffers) - 1, row, row + shape[0])
            row += shape[0]
    for name, entry in entries.items():
        if name not in parts:
            buffers.append(_empty(entry["shape"]))
            parts[name] = (len(buffers) - 1, None, None)
    return buffers, parts


ALIGN = 64      # bytes: what torch's own allocator gives, and what the matrix kernels read fastest


def _empty(shape) -> np.ndarray:
    """An uninitialised float32 array starting on an ALIGN-byte boundary, as torch.empty's do (numpy's
    large arrays start 16 bytes into their allocation)."""
    count = int(np.prod(shape, dtype=np.int64))
    raw = np.empty(count * 4 + ALIGN, dtype=np.uint8)
    start = -raw.ctypes.data % ALIGN
    return raw[start: start + count * 4].view(np.float32).reshape(shape)


# ----- reading ahead --------------------------------------------------------------------------
_lock = threading.Lock()
_ahead: tuple[Path, Future, threading.Event] | None = None     # the copy being read ahead, its result, its stop
Start = Callable[[Callable[[], None], str, Callable[[], None]], object]     # start(target, name, stop)


def _daemon(target: Callable[[], None], name: str, stop: Callable[[], None]) -> None:
    """A daemon thread nobody joins: the read only fills memory and writes nothing, so a process that ends
    under it loses nothing (torch-free numpy and file reads: no thread pool to tear down under it)."""
    threading.Thread(target=target, name=name, daemon=True).start()


def prefetch(gguf_path: Path, start: Start = _daemon) -> bool:
    """Start reading `gguf_path`'s copy on a thread, for the load that follows (`take`); True when a read
    started. Anything read ahead before is dropped and stopped. `start(target, name, stop)` starts the thread:
    the app's registry (threads.start, which calls `stop` and joins the thread at quit), else a daemon."""
    path = cache_path(gguf_path)
    if path is None or not path.is_file():
        return False
    future: Future = Future()
    stop = threading.Event()

    def run() -> None:
        try:
            future.set_result(read(path, stop.is_set))
        except Exception as error:      # the load reads again and reports what is wrong
            future.set_exception(error)

    global _ahead
    with _lock:
        if _ahead is not None:
            _ahead[2].set()
        _ahead = (path, future, stop)
    start(run, "model-prefetch", stop.set)
    return True


def take(copy_path: Path) -> CopyData | None:
    """What a prefetch read of `copy_path` (waiting for it to end), once; None when none was asked."""
    global _ahead
    with _lock:
        if _ahead is None or _ahead[0] != copy_path:
            return None
        (_, future, _stop), _ahead = _ahead, None
    try:
        return future.result()
    except Exception:
        return None


def drop(gguf_path: Path | None = None) -> None:
    """Drop what was read ahead and not taken: of `gguf_path`'s copy only (its load ended before reading
    its tensors; a read ahead of another file is kept), or whatever it was (its load was cancelled)."""
    global _ahead
    path = None if gguf_path is None else cache_path(gguf_path)
    with _lock:
        if _ahead is not None and (gguf_path is None or _ahead[0] == path):
            _ahead[2].set()             # a read still running stops at its next piece
            _ahead = None
