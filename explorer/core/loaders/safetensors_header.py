"""The JSON header of a safetensors file, checked before a byte of its data is read. Torch-free, so
the app can read a model's files while its model thread still imports torch (gguf_copy).

Checked the way the safetensors library checks it (`Metadata::validate`): the header is at most
100 MB of JSON holding an object; each entry has a known dtype string, a shape of non-negative
integers and two integer data_offsets with begin <= end; its byte size is prod(shape) * itemsize;
and the tensors, taken in offset order, are contiguous, do not overlap and cover the data exactly.
"""
from __future__ import annotations

import json
import math
import struct
from pathlib import Path

from explorer.core.errors import ModelLoadError
from explorer.core.loaders.model_file import open_regular, unreadable

DTYPE_BYTES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1, "U8": 1,
               "BOOL": 1, "F8_E4M3": 1, "F8_E5M2": 1}
FLOAT_DTYPES = {"F64", "F32", "F16", "BF16"}
MAX_HEADER_BYTES = 100_000_000


def read_safetensors_header(path: Path) -> dict:
    """The JSON header of a safetensors file, checked against the file's size; errors name the file."""
    try:
        with open_regular(path) as handle:
            size = path.stat().st_size
            prefix = handle.read(8)
            if len(prefix) < 8:
                raise ModelLoadError(f"{path} is truncated: it is shorter than a safetensors header.")
            header_len = struct.unpack("<Q", prefix)[0]
            if header_len > min(MAX_HEADER_BYTES, size - 8):
                raise ModelLoadError(_bad_length(path, prefix, header_len))
            header = json.loads(handle.read(header_len).decode("utf-8"))
    except OSError as error:
        raise unreadable(path, error) from None
    except (UnicodeDecodeError, ValueError, RecursionError):     # ValueError: JSONDecodeError, or a 5,000-digit number
        raise ModelLoadError(f"{path} is corrupt: its safetensors header is not valid JSON.") from None
    if not isinstance(header, dict):
        raise ModelLoadError(f"{path} is corrupt: its safetensors header is not a JSON object.")
    _check_metadata(header.get("__metadata__", {}), path)
    _check_layout(header, path, data_bytes=size - 8 - header_len)
    return header


def _bad_length(path: Path, prefix: bytes, header_len: int) -> str:
    """A file that begins with text (a symlink to a README, a Git LFS pointer) is named as text, not as a length."""
    if all(32 <= b < 127 or b in b"\t\r\n" for b in prefix):
        return f"{path} is not a safetensors file: it begins with the text {prefix.decode('ascii')!r}."
    return f"{path} is truncated or corrupt: its header claims {header_len} bytes."


def _check_metadata(metadata, path: Path) -> None:
    if not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values()):
        raise ModelLoadError(f"{path} is corrupt: its __metadata__ is not an object of strings.")


def _is_count(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _entry_span(name: str, entry, path: Path) -> tuple[int, int]:
    """(begin, end) of one typed, consistent header entry."""
    if not isinstance(entry, dict) or {"dtype", "shape", "data_offsets"} - set(entry):
        raise ModelLoadError(f"{path} is corrupt: the header entry for {name} lacks dtype, shape or data_offsets.")
    dtype, shape, offsets = entry["dtype"], entry["shape"], entry["data_offsets"]
    if not isinstance(dtype, str) or dtype not in DTYPE_BYTES:
        raise ModelLoadError(f"{path}: tensor {name} has the unknown dtype {dtype!r}.")
    if not isinstance(shape, list) or len(shape) > 8 or not all(map(_is_count, shape)):
        raise ModelLoadError(f"{path}: tensor {name} has the shape {shape!r}, not a list of non-negative integers.")
    if not isinstance(offsets, list) or len(offsets) != 2 or not all(map(_is_count, offsets)):
        raise ModelLoadError(f"{path}: tensor {name} has data_offsets {offsets!r}, not two non-negative integers.")
    begin, end = offsets
    needed = math.prod(shape) * DTYPE_BYTES[dtype]
    if begin > end or end - begin != needed:
        raise ModelLoadError(f"{path}: the header of tensor {name} lies: shape {shape} in {dtype} needs "
                             f"{needed} bytes, not {end - begin}.")
    if dtype not in FLOAT_DTYPES and name.endswith((".weight", ".bias")):
        raise ModelLoadError(f"{path}: tensor {name} has dtype {dtype}, but weights must be floating point.")
    return begin, end


def _check_layout(header: dict, path: Path, data_bytes: int) -> None:
    """Tensors in offset order must follow one another with no gap or overlap and end where the data ends."""
    spans = sorted((*_entry_span(name, entry, path), name) for name, entry in header.items() if name != "__metadata__")
    reached, previous = 0, None
    for begin, end, name in spans:
        if end > data_bytes:
            raise ModelLoadError(
                f"{path} is truncated or its header lies: tensor {name} ends at byte {end} of {data_bytes} data bytes.")
        if begin != reached:
            what = f"overlaps tensor {previous}" if begin < reached else f"leaves a gap of {begin - reached} bytes"
            raise ModelLoadError(f"{path}: the header lies: tensor {name} starts at data byte {begin} and {what}.")
        reached, previous = end, name
    if reached != data_bytes:
        raise ModelLoadError(f"{path} is corrupt: its tensors cover {reached} of its {data_bytes} data bytes.")
