"""Hugging Face folders: single and sharded safetensors, tokenizer, names, and the errors a person can fix."""
from __future__ import annotations

import json

import pytest
import torch

from explorer.core.errors import ModelLoadError, UnsupportedModelError
from explorer.core.loaders import checkpoint_name, open_checkpoint
from tests.core.tiny_checkpoints import write_hf_folder


def test_single_file_folder_loads_every_tensor(tmp_path):
    config, tensors = write_hf_folder(tmp_path / "tiny")
    seen = []
    checkpoint = open_checkpoint(tmp_path / "tiny", progress=lambda f, m: seen.append((f, m)))
    assert checkpoint.format == "hf" and checkpoint.name == "tiny"
    assert checkpoint.hf_config == config
    assert sorted(checkpoint.tensors) == sorted(tensors)
    assert all(torch.equal(checkpoint.tensors[n], t) for n, t in tensors.items())
    assert seen and seen[-1][0] == 1.0
    assert checkpoint.tokenizer.encode("The capital").text[0] == "The"


def test_sharded_folder_loads_through_the_index(tmp_path):
    _, tensors = write_hf_folder(tmp_path / "sharded", shards=3)
    assert len(list((tmp_path / "sharded").glob("*.safetensors"))) == 3
    checkpoint = open_checkpoint(tmp_path / "sharded" / "config.json")
    assert sorted(checkpoint.tensors) == sorted(tensors)


def test_missing_shard_is_named(tmp_path):
    write_hf_folder(tmp_path / "m", shards=2)
    (tmp_path / "m" / "model-00002-of-00002.safetensors").unlink()
    with pytest.raises(ModelLoadError, match="model-00002-of-00002.safetensors, which is missing"):
        open_checkpoint(tmp_path / "m")


def test_missing_tokenizer_is_a_clear_error(tmp_path):
    write_hf_folder(tmp_path / "m")
    (tmp_path / "m" / "tokenizer.json").unlink()
    with pytest.raises(ModelLoadError, match=r"has no tokenizer\.json"):
        open_checkpoint(tmp_path / "m")


def test_corrupt_tokenizer_names_the_file(tmp_path):
    write_hf_folder(tmp_path / "m")
    (tmp_path / "m" / "tokenizer.json").write_text('{"model": 3}')
    with pytest.raises(ModelLoadError, match=r"tokenizer\.json is not a valid tokenizer file"):
        open_checkpoint(tmp_path / "m")


def test_missing_config_and_missing_path(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(ModelLoadError, match="has no config.json"):
        open_checkpoint(tmp_path / "empty")
    with pytest.raises(ModelLoadError, match="does not exist"):
        open_checkpoint(tmp_path / "nowhere")
    (tmp_path / "notes.txt").write_text("hi")
    with pytest.raises(UnsupportedModelError, match="neither a model folder, a config.json nor a .gguf file"):
        open_checkpoint(tmp_path / "notes.txt")


def test_invalid_config_json_names_the_file(tmp_path):
    write_hf_folder(tmp_path / "m")
    (tmp_path / "m" / "config.json").write_text("{not json")
    with pytest.raises(ModelLoadError, match=r"config\.json is not valid JSON"):
        open_checkpoint(tmp_path / "m")


def test_tokenizer_config_add_bos(tmp_path):
    write_hf_folder(tmp_path / "m")
    (tmp_path / "m" / "tokenizer_config.json").write_text(json.dumps({"add_bos_token": True}))
    tokens = open_checkpoint(tmp_path / "m").tokenizer.encode("hi")
    assert tokens.ids[0] == 0 and tokens.special[0]


def test_license_comes_from_the_model_card(tmp_path):
    write_hf_folder(tmp_path / "m")
    (tmp_path / "m" / "README.md").write_text("---\nlicense: apache-2.0\n---\n# model")
    assert open_checkpoint(tmp_path / "m").license == "apache-2.0"


def test_hf_cache_snapshot_is_named_by_repo(tmp_path):
    path = tmp_path / "hub" / "models--HuggingFaceTB--SmolLM2-135M" / "snapshots" / "abc123"
    assert checkpoint_name(path) == "HuggingFaceTB/SmolLM2-135M"
    assert checkpoint_name(tmp_path / "x" / "model.gguf", "gguf") == "model"
