"""A fast, strict reader of a GGUF file's header: metadata scalars and tensor infos, no tensor data.

`gguf.GGUFReader` builds a numpy view per array element, which takes seconds on a
262k-token vocabulary. Listing models and checking a file before loading it only
need the scalars and the tensor table, so this reads those (arrays are skipped,
keeping their length) and checks that every tensor lies inside the file.
Layout: https://github.com/ggml-org/ggml/blob/master/docs/gguf.md
"""
from __future__ import annotations

import mmap
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType

from explorer.core.errors import ModelLoadError, UnsupportedModelError

_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
STRING, ARRAY = 8, 9
DEFAULT_ALIGNMENT = 32


@dataclass(frozen=True)
class TensorInfo:
    name: str
    shape: tuple[int, ...]  # numpy / PyTorch order (rows first), i.e. GGUF dims reversed
    type_id: int
    offset: int  # absolute offset of the data in the file

    @property
    def n_elements(self) -> int:
        count = 1
        for dim in self.shape:
            count *= dim
        return count


@dataclass(frozen=True)
class GGUFHeader:
    metadata: dict  # scalars and strings; arrays become {"array_length": n}
    tensors: tuple[TensorInfo, ...]
    file_size: int

    @property
    def architecture(self) -> str:
        return str(self.metadata.get("general.architecture", ""))

    def get(self, key: str, default=None):
        """An architecture-scoped value, e.g. get('block_count') reads 'llama.block_count'."""
        return self.metadata.get(f"{self.architecture}.{key}", default)


class _Cursor:
    def __init__(self, buffer, source: str, keep_arrays: bool = False):
        self.buffer, self.pos, self.source, self.keep_arrays = buffer, 0, source, keep_arrays

    def unpack(self, fmt: str):
        size = struct.calcsize(fmt)
        if self.pos + size > len(self.buffer):
            raise ModelLoadError(f"{self.source} is truncated: its GGUF header ends early.")
        value = struct.unpack_from(fmt, self.buffer, self.pos)[0]
        self.pos += size
        return value

    def string(self) -> str:
        length = self.unpack("<Q")
        if self.pos + length > len(self.buffer):
            raise ModelLoadError(f"{self.source} is truncated or corrupt: a GGUF string runs past the end of the file.")
        raw = bytes(self.buffer[self.pos:self.pos + length])
        self.pos += length
        return raw.decode("utf-8", errors="replace")

    def value(self, type_id: int):
        if type_id in _SCALARS:
            return self.unpack(_SCALARS[type_id])
        if type_id == STRING:
            return self.string()
        if type_id == ARRAY:
            return self.skip_array()
        raise ModelLoadError(f"{self.source} is corrupt: unknown GGUF value type {type_id}.")

    def skip_array(self) -> dict | list:
        """An array's values as a list when keep_arrays, else only {"array_length": n}."""
        item_type, count = self.unpack("<I"), self.unpack("<Q")
        if item_type in _SCALARS:
            size = struct.calcsize(_SCALARS[item_type]) * count
            if self.pos + size > len(self.buffer):
                raise ModelLoadError(f"{self.source} is truncated: a GGUF array runs past the end of the file.")
            values = (np.frombuffer(self.buffer, dtype=np.dtype(_SCALARS[item_type]), count=count, offset=self.pos)
                      .tolist() if self.keep_arrays else None)
            self.pos += size
        elif item_type == STRING:
            values = self._strings(count)
        else:
            values = [self.value(item_type) for _ in range(count)]
        return values if values is not None else {"array_length": count}

    def _strings(self, count: int) -> list[str] | None:
        """`count` strings in one tight loop (a vocabulary and its merges: ~100k of them, read at every
        load and every listing), decoded only when kept; the same checks and errors as `string`."""
        buffer, pos, end, keep = self.buffer, self.pos, len(self.buffer), self.keep_arrays is True
        unpack_from, values = struct.unpack_from, []
        for _ in range(count):
            if pos + 8 > end:
                raise ModelLoadError(f"{self.source} is truncated: its GGUF header ends early.")
            start = pos + 8
            pos = start + unpack_from("<Q", buffer, pos)[0]
            if pos > end:
                raise ModelLoadError(f"{self.source} is truncated or corrupt: a GGUF string runs past the end of the file.")
            if keep:
                values.append(str(buffer[start:pos], "utf-8", "replace"))
        self.pos = pos
        return values if keep else None


def tensor_bytes(info: TensorInfo, source: str) -> int:
    """Bytes of a tensor's data; an unknown quantization type is refused, naming it."""
    try:
        block, type_size = GGML_QUANT_SIZES[GGMLQuantizationType(info.type_id)]
    except (ValueError, KeyError):
        raise UnsupportedModelError(
            f"{source}: tensor {info.name} uses GGML quantization type {info.type_id}, which is unknown to this version of gguf."
        ) from None
    return info.n_elements // block * type_size


def _read_tensor_infos(cursor: _Cursor, count: int) -> list[tuple[str, tuple[int, ...], int, int]]:
    infos = []
    for _ in range(count):
        name = cursor.string()
        n_dims = cursor.unpack("<I")
        if n_dims > 8:
            raise ModelLoadError(f"{cursor.source} is corrupt: tensor {name} claims {n_dims} dimensions.")
        dims = tuple(cursor.unpack("<Q") for _ in range(n_dims))
        infos.append((name, tuple(reversed(dims)), cursor.unpack("<I"), cursor.unpack("<Q")))
    return infos


def read_gguf_header(path: str | Path, check_bounds: bool = True, keep_arrays: bool | str = False) -> GGUFHeader:
    """Parse the header of a .gguf file; raise ModelLoadError naming the file if it is not valid GGUF.

    keep_arrays: also decode array values (the tokenizer vocabulary); "numeric": only arrays of numbers
    (a vocabulary and its merges, ~100k strings, are a fifth of a second to decode); else keep only
    their lengths.
    """
    path = Path(path)
    source = str(path)
    try:
        with path.open("rb") as handle:
            file_size = path.stat().st_size
            if file_size < 24:
                raise ModelLoadError(f"{source} is too small to be a GGUF file ({file_size} bytes).")
            with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as buffer:
                return _parse(_Cursor(buffer, source, keep_arrays), file_size, check_bounds)
    except OSError as error:
        raise ModelLoadError(f"{source} cannot be read: {error.strerror or error}.") from None


def _parse(cursor: _Cursor, file_size: int, check_bounds: bool) -> GGUFHeader:
    source = cursor.source
    if bytes(cursor.buffer[:4]) != b"GGUF":
        raise ModelLoadError(f"{source} is not a GGUF file (its first bytes are not 'GGUF').")
    cursor.pos = 4
    version = cursor.unpack("<I")
    if version not in (2, 3):
        raise UnsupportedModelError(f"{source} is GGUF version {version}; only versions 2 and 3 are supported.")
    tensor_count, kv_count = cursor.unpack("<Q"), cursor.unpack("<Q")
    if tensor_count > 1_000_000 or kv_count > 1_000_000:
        raise ModelLoadError(f"{source} is corrupt: its header claims {tensor_count} tensors and {kv_count} keys.")
    metadata = {}
    for _ in range(kv_count):
        key = cursor.string()
        metadata[key] = cursor.value(cursor.unpack("<I"))
    raw_infos = _read_tensor_infos(cursor, tensor_count)
    alignment = int(metadata.get("general.alignment", DEFAULT_ALIGNMENT)) or DEFAULT_ALIGNMENT
    data_start = (cursor.pos + alignment - 1) // alignment * alignment
    tensors = tuple(TensorInfo(n, s, t, data_start + o) for n, s, t, o in raw_infos)
    for info in tensors if check_bounds else ():
        if info.offset + tensor_bytes(info, source) > file_size:
            raise ModelLoadError(
                f"{source} is truncated: tensor {info.name} ends past the end of the file ({file_size} bytes)."
            )
    return GGUFHeader(metadata=metadata, tensors=tensors, file_size=file_size)
