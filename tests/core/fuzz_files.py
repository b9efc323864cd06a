"""Model files taken apart into their fields and written back, so that a test can change any one field.

A safetensors file is (header dict, data bytes); a GGUF file is a list of typed metadata fields and a
list of tensor records, written back by our own serializer (gguf.GGUFWriter refuses to write many of
the broken files the fuzz suite wants). Layouts: https://huggingface.co/docs/safetensors and
https://github.com/ggml-org/ggml/blob/master/docs/gguf.md
"""
from __future__ import annotations

import json
import struct
from dataclasses import dataclass, field
from pathlib import Path

import gguf

# GGUF value types (gguf.GGUFValueType)
U8, I8, U16, I16, U32, I32, F32, BOOL, STRING, ARRAY, U64, I64, F64 = range(13)
SCALAR_FORMATS = {U8: "<B", I8: "<b", U16: "<H", I16: "<h", U32: "<I", I32: "<i", F32: "<f", BOOL: "<?",
                  U64: "<Q", I64: "<q", F64: "<d"}


# ----- safetensors -------------------------------------------------------------------------------
def read_safetensors(path: Path) -> tuple[dict, bytes]:
    raw = path.read_bytes()
    length = struct.unpack_from("<Q", raw)[0]
    return json.loads(raw[8:8 + length]), raw[8 + length:]


def write_safetensors(path: Path, header: dict, data: bytes, length: int | None = None) -> None:
    """Write a header (any JSON, NaN allowed) and data; `length` overrides the 8-byte header length."""
    blob = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(blob) if length is None else length) + blob + data)


# ----- GGUF -------------------------------------------------------------------------------------
@dataclass
class Value:
    """One typed GGUF value: a scalar or string, or an ARRAY whose `item` is the element type."""

    type: int
    value: object
    item: int | None = None         # arrays: element type; elements are Values when item == ARRAY


@dataclass
class TensorRecord:
    name: str
    dims: list[int]                 # GGUF order (fastest-varying first)
    type: int                       # GGMLQuantizationType
    data: bytes
    offset: int | None = None       # None: the next aligned offset


@dataclass
class GGUFParts:
    fields: list[tuple[str, Value]]
    tensors: list[TensorRecord]
    version: int = 3
    counts: tuple[int | None, int | None] = (None, None)    # (tensors, keys) written; None: the true count
    alignment: int = 32             # the padding the writer uses (the file may claim another)
    extra: dict = field(default_factory=dict)


def read_gguf(path: Path) -> GGUFParts:
    reader = gguf.GGUFReader(str(path))
    fields = []
    for item in reader.fields.values():
        if item.name.startswith("GGUF."):
            continue
        kind = int(item.types[0])
        if kind == ARRAY:
            fields.append((item.name, Value(ARRAY, item.contents(), int(item.types[-1]))))
        else:
            fields.append((item.name, Value(kind, item.contents())))
    tensors = [TensorRecord(t.name, [int(d) for d in t.shape], int(t.tensor_type), t.data.tobytes())
               for t in reader.tensors]
    return GGUFParts(fields, tensors)


def _string(text: str | bytes) -> bytes:
    raw = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    return struct.pack("<Q", len(raw)) + raw


def encode_value(value: Value) -> bytes:
    if value.type == STRING:
        return _string(value.value)
    if value.type == ARRAY:
        items = list(value.value)
        out = struct.pack("<IQ", value.item, len(items))
        if value.item == ARRAY:                 # each element: its own (type, count, items)
            return out + b"".join(encode_value(v) for v in items)
        return out + b"".join(encode_value(Value(value.item, v)) for v in items)
    return struct.pack(SCALAR_FORMATS[value.type], value.value)


def nested_array(depth: int) -> Value:
    value = Value(ARRAY, [1, 2], U32)
    for _ in range(depth):
        value = Value(ARRAY, [value], ARRAY)
    return value


def write_gguf(path: Path, parts: GGUFParts) -> None:
    align = max(1, parts.alignment)
    tensor_count = len(parts.tensors) if parts.counts[0] is None else parts.counts[0]
    key_count = len(parts.fields) if parts.counts[1] is None else parts.counts[1]
    head = [b"GGUF", struct.pack("<IQQ", parts.version, tensor_count, key_count)]
    for key, value in parts.fields:
        head.append(_string(key) + struct.pack("<I", value.type) + encode_value(value))
    offsets, cursor = [], 0
    for tensor in parts.tensors:
        offset = cursor if tensor.offset is None else tensor.offset
        offsets.append(offset)
        cursor = offset + len(tensor.data)
        cursor += -cursor % align
    for tensor, offset in zip(parts.tensors, offsets):
        head.append(_string(tensor.name) + struct.pack("<I", len(tensor.dims))
                    + b"".join(struct.pack("<Q", d) for d in tensor.dims) + struct.pack("<IQ", tensor.type, offset))
    header = b"".join(head)
    header += bytes(-len(header) % align)
    data = bytearray(max((o + len(t.data) for o, t in zip(offsets, parts.tensors)), default=0))
    for tensor, offset in zip(parts.tensors, offsets):
        data[offset:offset + len(tensor.data)] = tensor.data
    path.write_bytes(header + bytes(data))
