"""A fast, strict reader of a GGUF file's header: metadata scalars and tensor infos, no tensor data.

`gguf.GGUFReader` builds a numpy view per array element, which takes seconds on a
262k-token vocabulary. Listing models and checking a file before loading it only
need the scalars and the tensor table, so this reads those (arrays are skipped,
keeping their length) and checks that every tensor lies inside the file.
Layout: https://github.com/ggml-org/ggml/blob/master/docs/gguf.md
"""
from __future__ import annotations

import mmap
import os
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType

from explorer.core.config_schema import check_field
from explorer.core.errors import ModelLoadError, UnsupportedModelError
from explorer.core.loaders.model_file import open_regular, unreadable

_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
STRING, ARRAY = 8, 9
DEFAULT_ALIGNMENT = 32
MAX_DIMS = 4                   # GGML_MAX_DIMS


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

    def scalar(self, key: str, default, source: str, hf: str | None = None):
        """The typed value of `<arch>.<key>` (`default` where it is absent; a None default: it is required),
        checked against the config schema's rule for the config.json key `hf`: the getter every GGUF config
        reader (gguf_readers) reads through, so a value of the wrong type is one sentence naming its key."""
        value = self.get(key, default)
        if value is None:
            raise ModelLoadError(f"{source} lacks the metadata key {self.architecture}.{key}.")
        if isinstance(value, (dict, list)):  # an array, e.g. per-layer head counts
            raise UnsupportedModelError(f"{source} has per-layer values for {self.architecture}.{key},"
                                        " which are not supported.")
        if hf is not None:
            check_field(hf, value, {hf: f"{source}: {self.architecture}.{key}"})
        return value


# Arrays decoded into Python values, each with the most elements it may hold; every other array is skipped
# (kept as its length), so an unrelated 64 MB array never becomes a list. Keys ending in a per-layer name
# hold one value per layer.
DECODED_ARRAYS = {"tokenizer.ggml.tokens": 1 << 20, "tokenizer.ggml.merges": 1 << 20,
                  "tokenizer.ggml.scores": 1 << 20, "tokenizer.ggml.token_type": 1 << 20}
PER_LAYER_ARRAYS = (".attention.sliding_window_pattern", ".attention.head_count", ".attention.head_count_kv",
                    ".feed_forward_length")
MAX_LAYERS = 4096
MAX_PIECE_BYTES = 1024         # the longest token of a real vocabulary is a few hundred bytes


def array_limit(key: str) -> int | None:
    """The most elements the array under `key` may hold when decoded; None: never decoded."""
    if key in DECODED_ARRAYS:
        return DECODED_ARRAYS[key]
    return MAX_LAYERS if key.endswith(PER_LAYER_ARRAYS) else None


class _Cursor:
    def __init__(self, buffer, source: str, keep_arrays: bool | str = False):
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

    def value(self, type_id: int, key: str):
        if type_id in _SCALARS:
            return self.unpack(_SCALARS[type_id])
        if type_id == STRING:
            return self.string()
        if type_id == ARRAY:
            return self.skip_array(key)
        raise ModelLoadError(f"{self.source} is corrupt: {key} has the unknown GGUF value type {type_id}.")

    def _decodes(self, key: str, item_type: int, count: int) -> bool:
        """Whether this array is decoded: a key that is needed, within its limit, of a kind kept."""
        limit = array_limit(key)
        if limit is None or not self.keep_arrays or (item_type == STRING and self.keep_arrays is not True):
            return False
        if count > limit:
            raise ModelLoadError(f"{self.source}: {key} holds {count:,} values, more than the {limit:,} of any model.")
        return True

    def skip_array(self, key: str) -> dict | list:
        """An array's values as a list when needed and kept (see DECODED_ARRAYS), else only {"array_length": n}."""
        item_type, count = self.unpack("<I"), self.unpack("<Q")
        decode = self._decodes(key, item_type, count)
        if item_type in _SCALARS:
            size = struct.calcsize(_SCALARS[item_type]) * count
            if self.pos + size > len(self.buffer):
                raise ModelLoadError(f"{self.source} is truncated: a GGUF array runs past the end of the file.")
            values = (np.frombuffer(self.buffer, dtype=np.dtype(_SCALARS[item_type]), count=count, offset=self.pos)
                      .tolist() if decode else None)
            self.pos += size
        elif item_type == STRING:
            values = self._strings(count, decode, key)
        elif item_type == ARRAY:                 # llama.cpp's reader refuses them too; none is ever needed
            raise ModelLoadError(f"{self.source} is corrupt: {key} is an array of arrays,"
                                 " which GGUF models never hold.")
        else:
            raise ModelLoadError(f"{self.source} is corrupt: {key} is an array of the unknown GGUF type {item_type}.")
        return values if values is not None else {"array_length": count}

    def _strings(self, count: int, keep: bool, key: str) -> list[str] | None:
        """`count` strings in one tight loop (a vocabulary and its merges: ~100k of them, read at every
        load and every listing), decoded only when kept; the same checks and errors as `string`."""
        buffer, pos, end = self.buffer, self.pos, len(self.buffer)
        unpack_from, values = struct.unpack_from, []
        for _ in range(count):
            if pos + 8 > end:
                raise ModelLoadError(f"{self.source} is truncated: its GGUF header ends early.")
            start = pos + 8
            pos = start + unpack_from("<Q", buffer, pos)[0]
            if pos > end:
                raise ModelLoadError(f"{self.source} is truncated or corrupt:"
                                     " a GGUF string runs past the end of the file.")
            if keep:
                if pos - start > MAX_PIECE_BYTES:
                    raise ModelLoadError(f"{self.source}: {key} holds a string of {pos - start:,} bytes, longer "
                                         f"than the {MAX_PIECE_BYTES} of any token.")
                values.append(str(buffer[start:pos], "utf-8", "replace"))
        self.pos = pos
        return values if keep else None


def tensor_bytes(info: TensorInfo, source: str) -> int:
    """Bytes of a tensor's data; an unknown quantization type is refused, naming it."""
    try:
        block, type_size = GGML_QUANT_SIZES[GGMLQuantizationType(info.type_id)]
    except (ValueError, KeyError):
        raise UnsupportedModelError(
            f"{source}: tensor {info.name} uses GGML quantization type {info.type_id},"
            " which is unknown to this version of gguf."
        ) from None
    return info.n_elements // block * type_size


def _read_tensor_infos(cursor: _Cursor, count: int) -> list[tuple[str, tuple[int, ...], int, int]]:
    infos, names = [], set()
    for _ in range(count):
        name = cursor.string()
        if name in names:
            raise ModelLoadError(f"{cursor.source} is corrupt: the tensor {name} appears twice.")
        names.add(name)
        n_dims = cursor.unpack("<I")
        if n_dims > MAX_DIMS:
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
        with open_regular(path) as handle:
            file_size = os.fstat(handle.fileno()).st_size
            if file_size < 24:
                raise ModelLoadError(f"{source} is too small to be a GGUF file ({file_size} bytes).")
            with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as buffer:
                return _parse(_Cursor(buffer, source, keep_arrays), file_size, check_bounds)
    except OSError as error:
        raise unreadable(path, error) from None


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
        if key in metadata:
            raise ModelLoadError(f"{source} is corrupt: the metadata key {key} appears twice.")
        metadata[key] = cursor.value(cursor.unpack("<I"), key)
    raw_infos = _read_tensor_infos(cursor, tensor_count)
    alignment = _alignment(metadata, source)
    data_start = (cursor.pos + alignment - 1) // alignment * alignment
    tensors = tuple(TensorInfo(n, s, t, data_start + o) for n, s, t, o in raw_infos)
    if check_bounds:
        _check_layout(tensors, data_start, alignment, file_size, source)
    return GGUFHeader(metadata=metadata, tensors=tensors, file_size=file_size)


def _alignment(metadata: dict, source: str) -> int:
    """general.alignment: an integer power of two (llama.cpp refuses anything else)."""
    alignment = metadata.get("general.alignment", DEFAULT_ALIGNMENT)
    if (isinstance(alignment, bool) or not isinstance(alignment, int) or alignment <= 0
            or alignment & (alignment - 1) or alignment > 1 << 20):
        raise ModelLoadError(f"{source}: general.alignment = {alignment!r} is not a power of two.")
    return alignment


def _check_layout(tensors: tuple[TensorInfo, ...], data_start: int, alignment: int, file_size: int,
                  source: str) -> None:
    """As llama.cpp's reader: whole quantization blocks per row, and each tensor starting where the one
    before it ends (padded to the alignment), inside the file."""
    expected = data_start
    for info in tensors:
        size = tensor_bytes(info, source)
        block = GGML_QUANT_SIZES[GGMLQuantizationType(info.type_id)][0]
        if info.shape and info.shape[-1] % block:
            raise ModelLoadError(f"{source}: tensor {info.name} has rows of {info.shape[-1]} values, not whole "
                                 f"blocks of {block} for its quantization type.")
        if info.offset != expected:
            raise ModelLoadError(f"{source} is corrupt: tensor {info.name} starts at byte {info.offset}, "
                                 f"not at {expected} where the tensor before it ends.")
        if info.offset + size > file_size:
            raise ModelLoadError(
                f"{source} is truncated: tensor {info.name} ends past the end of the file ({file_size} bytes).")
        expected = info.offset + size + (-size % alignment)
