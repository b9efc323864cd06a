"""A corpus of malformed model files, generated here; each is refused with its own one-sentence message.

Nothing in a model file is ever executed: the pickle case carries a payload that
would create a file when unpickled, and the test checks that the file never appears.
"""
from __future__ import annotations

import json
import pickle
import struct

import pytest
import torch
from safetensors.torch import save_file
from tokenizers import Tokenizer

from explorer.core.errors import ModelLoadError, UnsupportedModelError
from explorer.core.loaders import open_checkpoint
from explorer.core.loaders.gguf_header import read_gguf_header
from tests.core.tiny_checkpoints import write_hf_folder, write_llama_gguf


@pytest.fixture
def folder(tmp_path):
    path = tmp_path / "model"
    write_hf_folder(path)
    return path


def raw_safetensors(path, header: dict, data: bytes) -> None:
    """A safetensors file written byte by byte, so that its header can say anything."""
    blob = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(blob)) + blob + data)


def refused(path, error=ModelLoadError) -> str:
    with pytest.raises(error) as caught:
        open_checkpoint(path)
    message = str(caught.value)
    assert "\n" not in message and message.endswith((".", ")")), message
    return message


def test_truncated_safetensors(folder):
    weights = folder / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])
    message = refused(folder)
    assert "model.safetensors is truncated" in message


def test_header_that_is_cut_short(folder):
    (folder / "model.safetensors").write_bytes(b"\x10\x00")
    assert "shorter than a safetensors header" in refused(folder)


def test_header_lies_about_offsets(folder):
    raw_safetensors(folder / "model.safetensors",
                    {"model.norm.weight": {"dtype": "F32", "shape": [400], "data_offsets": [0, 1600]}}, bytes(64))
    message = refused(folder)
    assert "header lies" in message and "model.norm.weight" in message


def test_header_lies_about_shape(folder):
    raw_safetensors(folder / "model.safetensors",
                    {"model.norm.weight": {"dtype": "F32", "shape": [32, 32], "data_offsets": [0, 64]}}, bytes(64))
    assert "the header of tensor model.norm.weight lies" in refused(folder)


def test_header_claims_a_huge_length(folder):
    (folder / "model.safetensors").write_bytes(struct.pack("<Q", 1 << 40) + b"{}")
    assert "header claims" in refused(folder)


def test_header_is_not_json(folder):
    (folder / "model.safetensors").write_bytes(struct.pack("<Q", 4) + b"{{{{")
    assert "header is not valid JSON" in refused(folder)


def test_unknown_dtype(folder):
    raw_safetensors(folder / "model.safetensors",
                    {"model.norm.weight": {"dtype": "F99", "shape": [4], "data_offsets": [0, 16]}}, bytes(16))
    assert "unknown dtype 'F99'" in refused(folder)


def test_integer_weights_are_the_wrong_dtype(folder):
    save_file({"model.norm.weight": torch.zeros(32, dtype=torch.int32)}, str(folder / "model.safetensors"))
    assert "has dtype I32, but weights must be floating point" in refused(folder)


def _engine():
    runtime = pytest.importorskip("explorer.core.runtime")
    return runtime.build_model


def test_missing_tensor(folder):
    config, tensors = json.loads((folder / "config.json").read_text()), dict(open_checkpoint(folder).tensors)
    del tensors["model.layers.1.mlp.up_proj.weight"]
    save_file(tensors, str(folder / "model.safetensors"))
    checkpoint = open_checkpoint(folder)  # the file itself is fine; the model it describes is not
    with pytest.raises(ModelLoadError, match="lacks the weight") as caught:
        _engine()(checkpoint.hf_config, checkpoint.tensors, source=str(folder))
    assert str(folder) in str(caught.value) and config["model_type"] == "llama"


def test_extra_tensor(folder):
    tensors = dict(open_checkpoint(folder).tensors)
    tensors["model.layers.7.mlp.up_proj.weight"] = torch.zeros(48, 32)
    save_file(tensors, str(folder / "model.safetensors"))
    checkpoint = open_checkpoint(folder)
    with pytest.raises(ModelLoadError, match="model.layers.7|layers.7") as caught:
        _engine()(checkpoint.hf_config, checkpoint.tensors, source=str(folder))
    assert str(folder) in str(caught.value)


def test_gguf_with_an_unknown_quantization_type(tmp_path, folder):
    config = json.loads((folder / "config.json").read_text())
    path = tmp_path / "odd.gguf"
    write_llama_gguf(path, config, open_checkpoint(folder).tensors, Tokenizer.from_file(str(folder / "tokenizer.json")))
    data = bytearray(path.read_bytes())
    name = b"blk.0.attn_norm.weight"
    at = data.index(struct.pack("<Q", len(name)) + name) + 8 + len(name)
    n_dims = struct.unpack_from("<I", data, at)[0]
    type_at = at + 4 + 8 * n_dims
    assert struct.unpack_from("<I", data, type_at)[0] == 0  # F32 before the edit
    struct.pack_into("<I", data, type_at, 211)
    path.write_bytes(bytes(data))
    message = refused(path, UnsupportedModelError)
    assert "blk.0.attn_norm.weight uses GGML quantization type 211" in message


def test_truncated_gguf(tmp_path, folder):
    config = json.loads((folder / "config.json").read_text())
    path = tmp_path / "cut.gguf"
    write_llama_gguf(path, config, open_checkpoint(folder).tensors, Tokenizer.from_file(str(folder / "tokenizer.json")))
    path.write_bytes(path.read_bytes()[:-100])
    assert "is truncated: tensor" in refused(path)
    path.write_bytes(b"GGUF" + b"\x03\x00\x00\x00" + b"\xff" * 16)
    assert "corrupt: its header claims" in refused(path)
    path.write_bytes(b"PK\x03\x04" + bytes(100))
    assert "not a GGUF file" in refused(path)
    with pytest.raises(ModelLoadError, match="not a GGUF file"):
        read_gguf_header(path)  # the reader `models` uses is the same strict one


def test_config_that_asks_for_remote_code(folder):
    config = json.loads((folder / "config.json").read_text())
    config["auto_map"] = {"AutoModelForCausalLM": "modeling_evil.EvilForCausalLM"}
    (folder / "config.json").write_text(json.dumps(config))
    message = refused(folder, UnsupportedModelError)
    assert "asks to run custom code" in message and "modeling_evil.EvilForCausalLM" in message
    config.pop("auto_map")
    config["trust_remote_code"] = True
    (folder / "config.json").write_text(json.dumps(config))
    assert "asks to run custom code" in refused(folder, UnsupportedModelError)


class _CreatesFile:
    """Unpickling this calls open(target, 'w'): the file appearing would prove code ran."""

    def __init__(self, target):
        self.target = str(target)

    def __reduce__(self):
        return (open, (self.target, "w"))


@pytest.mark.parametrize("suffix", [".bin", ".pt", ".pth", ".ckpt"])
def test_pickle_is_refused_and_never_executed(tmp_path, folder, suffix):
    decoy = tmp_path / "decoy-created"
    pickle.loads(pickle.dumps(_CreatesFile(decoy))).close()
    assert decoy.exists()  # the payload works when unpickled

    target = tmp_path / "pwned"
    (folder / "model.safetensors").unlink()
    checkpoint = folder / f"pytorch_model{suffix}"
    checkpoint.write_bytes(pickle.dumps({"model.norm.weight": _CreatesFile(target)}))
    message = refused(folder, UnsupportedModelError)
    assert f"pytorch_model{suffix}" in message and "never unpickled" in message and "safetensors" in message
    message = refused(checkpoint, UnsupportedModelError)
    assert "is a pickle checkpoint" in message
    assert not target.exists()
