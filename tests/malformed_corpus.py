"""A corpus of malformed model files, generated on demand: each case spoils a good tiny Llama folder.

Used twice: tests/core/test_malformed.py opens every case through the loaders
and the engine, tests/app/test_malformed_app.py through the window. A case
builds its file from a fresh good folder (written by `write_hf_folder`) and
says which error it must raise and a piece of the one sentence that error
must say. Nothing in a model file is ever executed: the pickle cases carry a
payload that would create `scratch / MARKER` if it were ever unpickled.
The GGUF cases' builders live in tests/malformed_gguf.py.
"""
from __future__ import annotations

import json
import os
import pickle
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import torch
from safetensors.torch import save_file

from explorer.core.errors import ModelLoadError, NonFiniteError, UnsupportedModelError
from tests.core.tiny_checkpoints import write_hf_folder
from tests.malformed_gguf import (  # noqa: F401
    gguf_alignment_string,
    gguf_header_claims,
    gguf_truncated,
    gguf_unknown_quantization,
    gguf_with_a_million_layers,
    llama_gguf,
    not_gguf,
)

MARKER = "pwned"
PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".ckpt")


@dataclass(frozen=True)
class Case:
    name: str
    build: Callable[[Path, Path], Path]   # (a good folder, a scratch folder) -> the path to open
    says: str                             # a piece of the one-sentence message
    error: type = ModelLoadError
    at_build: bool = False                # the file opens; the engine refuses the model it describes
    names_file: bool = True               # whether the sentence names the file (False: a known gap)


class CreatesFile:
    """Unpickling this calls open(target, 'w'): the file appearing would prove code ran."""

    def __init__(self, target) -> None:
        self.target = str(target)

    def __reduce__(self):
        return (open, (self.target, "w"))


def good_folder(path: Path) -> Path:
    write_hf_folder(path)
    return path


def raw_safetensors(path: Path, header: dict, data: bytes) -> None:
    """A safetensors file written byte by byte, so that its header can say anything."""
    blob = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(blob)) + blob + data)


def _weights(folder: Path) -> Path:
    return folder / "model.safetensors"


def truncated(folder: Path, scratch: Path) -> Path:
    _weights(folder).write_bytes(_weights(folder).read_bytes()[: _weights(folder).stat().st_size // 2])
    return folder


def header_cut_short(folder: Path, scratch: Path) -> Path:
    _weights(folder).write_bytes(b"\x10\x00")
    return folder


def header_lies_about_offsets(folder: Path, scratch: Path) -> Path:
    raw_safetensors(_weights(folder),
                    {"model.norm.weight": {"dtype": "F32", "shape": [400], "data_offsets": [0, 1600]}}, bytes(64))
    return folder


def header_lies_about_shape(folder: Path, scratch: Path) -> Path:
    raw_safetensors(_weights(folder),
                    {"model.norm.weight": {"dtype": "F32", "shape": [32, 32], "data_offsets": [0, 64]}}, bytes(64))
    return folder


def header_claims_a_huge_length(folder: Path, scratch: Path) -> Path:
    _weights(folder).write_bytes(struct.pack("<Q", 1 << 40) + b"{}")
    return folder


def header_not_json(folder: Path, scratch: Path) -> Path:
    _weights(folder).write_bytes(struct.pack("<Q", 4) + b"{{{{")
    return folder


def unknown_dtype(folder: Path, scratch: Path) -> Path:
    raw_safetensors(_weights(folder),
                    {"model.norm.weight": {"dtype": "F99", "shape": [4], "data_offsets": [0, 16]}}, bytes(16))
    return folder


def integer_weights(folder: Path, scratch: Path) -> Path:
    save_file({"model.norm.weight": torch.zeros(32, dtype=torch.int32)}, str(_weights(folder)))
    return folder


def _tensors(folder: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    return load_file(str(_weights(folder)))


def missing_tensor(folder: Path, scratch: Path) -> Path:
    tensors = _tensors(folder)
    del tensors["model.layers.1.mlp.up_proj.weight"]
    save_file(tensors, str(_weights(folder)))
    return folder


def extra_tensor(folder: Path, scratch: Path) -> Path:
    tensors = _tensors(folder)
    tensors["model.layers.7.mlp.up_proj.weight"] = torch.zeros(48, 32)
    save_file(tensors, str(_weights(folder)))
    return folder


def _config_with(folder: Path, **changes) -> Path:
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, **changes}))
    return folder


def no_tokenizer(folder: Path, scratch: Path) -> Path:
    (folder / "tokenizer.json").unlink()
    return folder


def unsupported_architecture(folder: Path, scratch: Path) -> Path:
    return _config_with(folder, model_type="mamba", architectures=["MambaForCausalLM"])


def remote_code_auto_map(folder: Path, scratch: Path) -> Path:
    return _config_with(folder, auto_map={"AutoModelForCausalLM": "modeling_evil.EvilForCausalLM"})


def remote_code_trusted(folder: Path, scratch: Path) -> Path:
    return _config_with(folder, trust_remote_code=True)


def config_nested_deeply(folder: Path, scratch: Path) -> Path:
    """A config.json no recursive JSON parser reads: 100,000 nested objects (200 kB)."""
    (folder / "config.json").write_text('{"a":' * 100_000 + "1" + "}" * 100_000)
    return folder


def config_far_too_big(folder: Path, scratch: Path) -> Path:
    """A 1 GiB config.json (sparse: it costs no disk), refused from its size without being read."""
    with (folder / "config.json").open("r+b") as handle:
        handle.truncate(1 << 30)
    return folder


def tokenizer_far_too_big(folder: Path, scratch: Path) -> Path:
    """A 4 GiB tokenizer.json (sparse), refused from its size: the tokenizer library would read it all."""
    with (folder / "tokenizer.json").open("r+b") as handle:
        handle.truncate(4 << 30)
    return folder


def tokenizer_nested_deeply(folder: Path, scratch: Path) -> Path:
    (folder / "tokenizer.json").write_text("[" * 100_000 + "]" * 100_000)
    return folder


def _tokenizer_with(folder: Path, change: Callable[[dict], None]) -> Path:
    spec = json.loads((folder / "tokenizer.json").read_text(encoding="utf-8"))
    change(spec["model"])
    (folder / "tokenizer.json").write_text(json.dumps(spec), encoding="utf-8")
    return folder


def tokenizer_with_a_long_piece(folder: Path, scratch: Path) -> Path:
    """A 5,000-byte vocabulary piece (and the merge that builds it): it would stretch the prompt's bound."""
    def add(model: dict) -> None:
        for piece in ("x" * 2500, "x" * 5000):
            model["vocab"].setdefault(piece, len(model["vocab"]))
        model["merges"].append(["x" * 2500, "x" * 2500] if isinstance(model["merges"][0], list) else
                               f"{'x' * 2500} {'x' * 2500}")
    return _tokenizer_with(folder, add)


def tokenizer_with_millions_of_pieces(folder: Path, scratch: Path) -> Path:
    """Two million vocabulary entries (30 MB), refused from the bytes before the library builds them."""
    return _tokenizer_with(folder, lambda model: model["vocab"].update(
        {f"p{index}": index + 1000 for index in range(2_000_000)}))


def config_with_a_million_layers(folder: Path, scratch: Path) -> Path:
    return _config_with(folder, num_hidden_layers=1_000_000)


def config_with_a_huge_context(folder: Path, scratch: Path) -> Path:
    return _config_with(folder, max_position_embeddings=10 ** 12)


def config_with_a_huge_vocabulary_and_width(folder: Path, scratch: Path) -> Path:
    return _config_with(folder, vocab_size=10 ** 9, hidden_size=10 ** 6)


def config_with_more_layers_than_the_weights(folder: Path, scratch: Path) -> Path:
    return _config_with(folder, num_hidden_layers=900)


def config_with_fewer_layers_than_the_weights(folder: Path, scratch: Path) -> Path:
    return _config_with(folder, num_hidden_layers=1)


def config_with_negative_heads(folder: Path, scratch: Path) -> Path:
    return _config_with(folder, num_attention_heads=-4)


def offsets_overlap(folder: Path, scratch: Path) -> Path:
    """A second tensor over the bytes of the first, moved by 4: safetensors itself refuses overlaps."""
    header, data = _header_and_data(_weights(folder))
    first = min((e["data_offsets"][0], n) for n, e in header.items() if n != "__metadata__")[1]
    begin, end = header[first]["data_offsets"]
    header["model.layers.0.extra.weight"] = {**header[first], "data_offsets": [begin + 4, end + 4]}
    raw_safetensors(_weights(folder), header, data)
    return folder


def offsets_as_strings(folder: Path, scratch: Path) -> Path:
    header, data = _header_and_data(_weights(folder))
    header["model.norm.weight"]["data_offsets"] = [str(o) for o in header["model.norm.weight"]["data_offsets"]]
    raw_safetensors(_weights(folder), header, data)
    return folder


def _header_and_data(path: Path) -> tuple[dict, bytes]:
    raw = path.read_bytes()
    length = struct.unpack_from("<Q", raw)[0]
    return json.loads(raw[8:8 + length]), raw[8 + length:]


def nan_weight(folder: Path, scratch: Path) -> Path:
    tensors = _tensors(folder)
    tensors["model.layers.1.mlp.up_proj.weight"][3, 5] = float("nan")
    save_file(tensors, str(_weights(folder)))
    return folder


def weights_are_a_fifo(folder: Path, scratch: Path) -> Path:
    _weights(folder).unlink()
    os.mkfifo(_weights(folder))
    return folder


def weights_link_to_text(folder: Path, scratch: Path) -> Path:
    (folder / "notes.txt").write_text("these are not weights\n")
    _weights(folder).unlink()
    _weights(folder).symlink_to(folder / "notes.txt")
    return folder


def config_with_zero_rope_theta(folder: Path, scratch: Path) -> Path:
    return _config_with(folder, rope_theta=0)


def config_with_nan_epsilon(folder: Path, scratch: Path) -> Path:
    (folder / "config.json").write_text(
        (folder / "config.json").read_text().replace('"rms_norm_eps": 1e-05', '"rms_norm_eps": NaN'))
    return folder


def config_with_unknown_activation(folder: Path, scratch: Path) -> Path:
    return _config_with(folder, hidden_act="swishy")


def pickle_in_folder(suffix: str) -> Callable[[Path, Path], Path]:
    def build(folder: Path, scratch: Path) -> Path:
        _weights(folder).unlink()
        (folder / f"pytorch_model{suffix}").write_bytes(
            pickle.dumps({"model.norm.weight": CreatesFile(scratch / MARKER)}))
        return folder
    return build


def pickle_file(folder: Path, scratch: Path) -> Path:
    path = pickle_in_folder(".bin")(folder, scratch) / "pytorch_model.bin"
    return path


CASES = [
    Case("truncated safetensors", truncated, "model.safetensors is truncated"),
    Case("header cut short", header_cut_short, "shorter than a safetensors header"),
    Case("header lies about offsets", header_lies_about_offsets, "header lies"),
    Case("header lies about a shape", header_lies_about_shape, "the header of tensor model.norm.weight lies"),
    Case("header claims a huge length", header_claims_a_huge_length, "header claims"),
    Case("header is not JSON", header_not_json, "header is not valid JSON"),
    Case("unknown dtype", unknown_dtype, "unknown dtype 'F99'"),
    Case("wrong dtype", integer_weights, "has dtype I32, but weights must be floating point"),
    Case("missing tensor", missing_tensor, "lacks the weight", at_build=True),
    Case("extra tensor", extra_tensor, "layers.7", at_build=True),
    Case("missing tokenizer", no_tokenizer, "has no tokenizer.json"),
    Case("unsupported architecture", unsupported_architecture, "model_type 'mamba' is not supported",
         UnsupportedModelError, at_build=True, names_file=False),
    Case("GGUF with an unknown quantization type", gguf_unknown_quantization,
         "blk.0.attn_norm.weight uses GGML quantization type 211", UnsupportedModelError),
    Case("truncated GGUF", gguf_truncated, "is truncated: tensor"),
    Case("GGUF says a million layers", gguf_with_a_million_layers, "llama.block_count = 1000000 is not legal",
         UnsupportedModelError),
    Case("GGUF header claims too much", gguf_header_claims, "header claims"),
    Case("not a GGUF file", not_gguf, "not a GGUF file"),
    Case("config asks for remote code (auto_map)", remote_code_auto_map, "asks to run custom code",
         UnsupportedModelError),
    Case("config asks for remote code (trust_remote_code)", remote_code_trusted, "asks to run custom code",
         UnsupportedModelError),
    *[Case(f"pickle checkpoint {suffix} in a folder", pickle_in_folder(suffix), "never unpickled",
           UnsupportedModelError) for suffix in PICKLE_SUFFIXES],
    Case("pickle checkpoint opened as a file", pickle_file, "is a pickle checkpoint", UnsupportedModelError),
    # Resource bombs: each is refused from the config and the weights' headers, before anything is built.
    Case("config nested too deeply to parse", config_nested_deeply, "nested too deeply"),
    Case("config of a gigabyte", config_far_too_big, "1,073,741,824 bytes"),
    Case("tokenizer of 4 gigabytes", tokenizer_far_too_big, "4,294,967,296 bytes"),
    Case("tokenizer nested too deeply to parse", tokenizer_nested_deeply, "is not a valid tokenizer file"),
    Case("tokenizer piece of 5,000 bytes", tokenizer_with_a_long_piece,
         "holds a vocabulary piece of 5,000 bytes, longer than the 1,024 of any token"),
    Case("tokenizer of two million pieces", tokenizer_with_millions_of_pieces, "vocabulary entries, more than the"),
    Case("config asks for a million layers", config_with_a_million_layers, "num_hidden_layers = 1000000",
         UnsupportedModelError, at_build=True),
    Case("config asks for a 10^12-token context", config_with_a_huge_context,
         "max_position_embeddings = 1000000000000", UnsupportedModelError, at_build=True),
    Case("config asks for a 10^9 vocabulary and width", config_with_a_huge_vocabulary_and_width,
         "hidden_size = 1000000", UnsupportedModelError, at_build=True),
    Case("config has more layers than the weights", config_with_more_layers_than_the_weights,
         "num_hidden_layers = 900, but the weights hold layers up to", at_build=True),
    Case("config has fewer layers than the weights", config_with_fewer_layers_than_the_weights,
         "num_hidden_layers = 1, but the weights hold layers up to", at_build=True),
    Case("config has negative heads", config_with_negative_heads, "num_attention_heads = -4",
         UnsupportedModelError, at_build=True),
    # The second corpus: files that type-check nowhere else, and values that ran to NaN.
    Case("safetensors tensors overlap", offsets_overlap, "overlaps tensor"),
    Case("safetensors offsets are strings", offsets_as_strings, "not two non-negative integers"),
    Case("a NaN weight", nan_weight, "weight model.layers.1.mlp.up_proj.weight holds nan", NonFiniteError,
         at_build=True),
    Case("weights are a FIFO", weights_are_a_fifo, "is a named pipe (FIFO), not a regular file"),
    Case("weights link to a text file", weights_link_to_text, "is not a safetensors file: it begins with the text"),
    Case("GGUF alignment is a string", gguf_alignment_string, "general.alignment = 'x' is not a power of two"),
    Case("config has rope_theta 0", config_with_zero_rope_theta, "rope_theta = 0 is not legal",
         UnsupportedModelError, at_build=True),
    Case("config has a NaN epsilon", config_with_nan_epsilon, "rms_norm_eps = nan is not legal",
         UnsupportedModelError, at_build=True),
    Case("config names an unknown activation", config_with_unknown_activation, "hidden_act = 'swishy' is not legal",
         UnsupportedModelError, at_build=True),
]
CASE_IDS = [case.name for case in CASES]
