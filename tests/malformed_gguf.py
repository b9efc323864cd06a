"""The GGUF cases of the malformed corpus (tests/malformed_corpus.py): each writes the good tiny Llama folder
as a GGUF file the way llama.cpp's converter would, then spoils one field of its header or data."""
from __future__ import annotations

import json
import struct
from pathlib import Path

import torch
from safetensors.torch import load_file
from tokenizers import Tokenizer

from tests.core.tiny_checkpoints import write_llama_gguf


def _tensors(folder: Path) -> dict[str, torch.Tensor]:
    return load_file(str(folder / "model.safetensors"))


def llama_gguf(folder: Path, scratch: Path, name: str = "model.gguf") -> Path:
    """The good folder written as a GGUF file, as llama.cpp's converter would."""
    path = scratch / name
    config = json.loads((folder / "config.json").read_text())
    write_llama_gguf(path, config, _tensors(folder), Tokenizer.from_file(str(folder / "tokenizer.json")))
    return path


def gguf_with_a_million_layers(folder: Path, scratch: Path) -> Path:
    """A GGUF whose metadata says 10^6 blocks over the tiny model's two."""
    path = scratch / "bomb.gguf"
    config = {**json.loads((folder / "config.json").read_text()), "num_hidden_layers": 1_000_000}
    write_llama_gguf(path, config, _tensors(folder), Tokenizer.from_file(str(folder / "tokenizer.json")))
    return path


def gguf_unknown_quantization(folder: Path, scratch: Path) -> Path:
    path = llama_gguf(folder, scratch, "odd.gguf")
    data = bytearray(path.read_bytes())
    name = b"blk.0.attn_norm.weight"
    at = data.index(struct.pack("<Q", len(name)) + name) + 8 + len(name)
    n_dims = struct.unpack_from("<I", data, at)[0]
    type_at = at + 4 + 8 * n_dims
    assert struct.unpack_from("<I", data, type_at)[0] == 0  # F32 before the edit
    struct.pack_into("<I", data, type_at, 211)
    path.write_bytes(bytes(data))
    return path


def gguf_truncated(folder: Path, scratch: Path) -> Path:
    path = llama_gguf(folder, scratch, "cut.gguf")
    path.write_bytes(path.read_bytes()[:-100])
    return path


def gguf_header_claims(folder: Path, scratch: Path) -> Path:
    path = scratch / "claims.gguf"
    path.write_bytes(b"GGUF" + b"\x03\x00\x00\x00" + b"\xff" * 16)
    return path


def not_gguf(folder: Path, scratch: Path) -> Path:
    path = scratch / "zip.gguf"
    path.write_bytes(b"PK\x03\x04" + bytes(100))
    return path


def gguf_alignment_string(folder: Path, scratch: Path) -> Path:
    """general.alignment written as the string "x" (a GGUF string value: type 8)."""
    path = llama_gguf(folder, scratch, "aligned.gguf")
    data = path.read_bytes()
    key = b"general.alignment"
    field = struct.pack("<Q", len(key)) + key + struct.pack("<IQ", 8, 1) + b"x"
    count = struct.unpack_from("<Q", data, 16)[0]
    path.write_bytes(data[:16] + struct.pack("<Q", count + 1) + field + data[24:])
    return path
