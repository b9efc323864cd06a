"""The JSON header of a safetensors file, checked before a byte of its data is read. Torch-free, so
the app can read a model's files while its model thread still imports torch (gguf_copy)."""
from __future__ import annotations

import json
import struct
from pathlib import Path

from explorer.core.errors import ModelLoadError

DTYPE_BYTES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1, "U8": 1,
               "BOOL": 1, "F8_E4M3": 1, "F8_E5M2": 1}
FLOAT_DTYPES = {"F64", "F32", "F16", "BF16"}
MAX_HEADER_BYTES = 100_000_000


def read_safetensors_header(path: Path) -> dict:
    """The JSON header of a safetensors file, checked against the file's size; errors name the file."""
    try:
        size = path.stat().st_size
        with path.open("rb") as handle:
            prefix = handle.read(8)
            if len(prefix) < 8:
                raise ModelLoadError(f"{path} is truncated: it is shorter than a safetensors header.")
            header_len = struct.unpack("<Q", prefix)[0]
            if header_len > min(MAX_HEADER_BYTES, size - 8):
                raise ModelLoadError(f"{path} is truncated or corrupt: its header claims {header_len} bytes.")
            header = json.loads(handle.read(header_len).decode("utf-8"))
    except OSError as error:
        raise ModelLoadError(f"{path} cannot be read ({error.strerror or error}).") from None
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        raise ModelLoadError(f"{path} is corrupt: its safetensors header is not valid JSON.") from None
    if not isinstance(header, dict):
        raise ModelLoadError(f"{path} is corrupt: its safetensors header is not a JSON object.")
    _check_entries(header, path, data_bytes=size - 8 - header_len)
    return header


def _check_entries(header: dict, path: Path, data_bytes: int) -> None:
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        if not isinstance(entry, dict) or {"dtype", "shape", "data_offsets"} - set(entry):
            raise ModelLoadError(f"{path} is corrupt: the header entry for {name} lacks dtype, shape or data_offsets.")
        dtype, shape, (start, end) = entry["dtype"], entry["shape"], entry["data_offsets"]
        if dtype not in DTYPE_BYTES:
            raise ModelLoadError(f"{path}: tensor {name} has the unknown dtype {dtype!r}.")
        if end > data_bytes:
            raise ModelLoadError(
                f"{path} is truncated or its header lies: tensor {name} ends at byte {end} of {data_bytes} data bytes.")
        count = 1
        for dim in shape:
            count *= int(dim)
        if not 0 <= start <= end or end - start != count * DTYPE_BYTES[dtype]:
            raise ModelLoadError(
                f"{path}: the header of tensor {name} lies: shape {shape} in {dtype} needs "
                f"{count * DTYPE_BYTES[dtype]} bytes, not {end - start}.")
        if dtype not in FLOAT_DTYPES and name.endswith((".weight", ".bias")):
            raise ModelLoadError(f"{path}: tensor {name} has dtype {dtype}, but weights must be floating point.")
