"""The family row holds its tables as values, not as names another module looks up: the safetensors and GGUF
weight names and the GGUF config reader are in the row itself, so a new family is one row. A row added in a
test with its own tables, and no other edit, is followed by the safetensors map, the GGUF tensor names and the
GGUF config; and no module keeps a registry of the rows' tables by name."""
from __future__ import annotations

import dataclasses
import importlib
import inspect
import pkgutil
import re
from collections.abc import Mapping

import pytest
import torch

import explorer.core
from explorer.core import families, loaders
from explorer.core.loaders import gguf, gguf_config
from explorer.core.loaders.gguf_header import GGUFHeader
from explorer.core.weights import map_weights
from tests.core.conftest import make_hf_model

# The columns that are names: of a model_type (a wrapper's text_model too), of llama.cpp's architecture, of
# what the builders and drivers (torch code above the row) resolve, and plain labels. Every other column holds
# its fact itself.
NAME_COLUMNS = {"model_type", "builder", "driver", "cache", "gguf", "reports", "positional", "text_model"}


@pytest.mark.parametrize("row", list(families.FAMILIES.values()), ids=list(families.FAMILIES))
def test_a_row_holds_its_tables_and_readers_themselves(row):
    for column in dataclasses.fields(row):
        if column.name not in NAME_COLUMNS:
            assert not isinstance(getattr(row, column.name), str), f"{row.model_type}.{column.name} is a name"
    assert isinstance(row.weights, Mapping) == row.decoder_only
    assert (row.gguf_reader is None) == (row.gguf_weights is None)
    if row.gguf_reader is not None:
        assert callable(row.gguf_reader) and isinstance(row.gguf_weights, Mapping)


def _core_modules():
    for found in pkgutil.walk_packages(explorer.core.__path__, "explorer.core."):
        yield importlib.import_module(found.name)


def _is_name_table(value) -> bool:
    """A checkpoint name table: a dict whose keys include a per-layer name pattern ("blk.{i}.attn_q.weight")."""
    return isinstance(value, dict) and any(isinstance(key, str) and "{i}" in key for key in value)


def test_no_module_keeps_the_rows_tables_by_name():
    """A str-keyed dict whose values are name tables, or the rows' readers, is a second list of the families
    (weights.TABLES and loaders.gguf.TABLES were, with the rows holding the keys)."""
    readers = [row.gguf_reader for row in families.FAMILIES.values() if row.gguf_reader is not None]
    registries = []
    for module in _core_modules():
        for name, value in vars(module).items():
            if isinstance(value, dict) and value and all(isinstance(key, str) for key in value) and any(
                    _is_name_table(v) or any(v is reader for reader in readers) for v in value.values()):
                registries.append(f"{module.__name__}.{name}")
    assert registries == []


TOY_EMBEDDING = "model.tok_embeddings.weight"      # a checkpoint name no real family uses


@pytest.fixture
def toy_row(monkeypatch):
    """Llama's blocks under a new model_type whose checkpoints name the embedding otherwise, and whose GGUF
    files ("toyarch") hold one tensor under a name of their own, read by a reader of their own."""
    llama = families.FAMILIES["llama"]
    weights = {(TOY_EMBEDDING if hf == "model.embed_tokens.weight" else hf): ours for hf, ours in llama.weights.items()}
    row = dataclasses.replace(
        llama, model_type="toy", weights=weights, gguf="toyarch", gguf_permuted_qk=False, writing=None,
        gguf_reader=lambda header, source: {**TOY_CONFIG, "num_hidden_layers": header.get("block_count")},
        gguf_weights={"toy_embd.weight": TOY_EMBEDDING})
    monkeypatch.setitem(families.FAMILIES, "toy", row)
    return row


TOY_CONFIG = dict(model_type="toy", vocab_size=64, hidden_size=48, intermediate_size=64, num_attention_heads=6,
                  max_position_embeddings=32)


def test_a_new_rows_weight_names_are_followed_by_the_map(toy_row):
    hf = make_hf_model("llama")
    tensors = {(TOY_EMBEDDING if name == "model.embed_tokens.weight" else name): tensor
               for name, tensor in hf.state_dict().items()}
    mapped = map_weights("toy", tensors, hf.config.num_hidden_layers, "toy checkpoint")
    assert torch.equal(mapped["embed.weight"], hf.state_dict()["model.embed_tokens.weight"])
    with pytest.raises(Exception, match="model.embed_tokens.weight' is not part of a toy model"):
        map_weights("toy", dict(hf.state_dict()), hf.config.num_hidden_layers, "toy checkpoint")


def test_a_new_rows_gguf_names_and_reader_are_followed_by_the_gguf_loader(toy_row):
    assert gguf.hf_name("toyarch", "toy_embd.weight") == TOY_EMBEDDING
    assert gguf.hf_name("toyarch", "token_embd.weight") is None
    header = GGUFHeader(metadata={"general.architecture": "toyarch", "toyarch.block_count": 3}, tensors=(),
                        file_size=0)
    assert gguf_config.config_of(header, "toy.gguf") == {**TOY_CONFIG, "num_hidden_layers": 3}


def test_the_kv_tables_keys_only_reading_follows_the_row():
    """A GGUF file the engine does not build (DeepSeek V2's "deepseek2") is read key by key for the KV table, and
    what its architecture adds (MLA's head sizes under their own keys) is the row's, not an `arch ==` branch of
    the loader: d_nope = key_length_mla - d_R, d_v = value_length_mla, as llama.cpp writes them."""
    assert families.gguf_named("deepseek2").gguf_dimensions is not None
    metadata = {"general.architecture": "deepseek2", "deepseek2.block_count": 2, "deepseek2.embedding_length": 64,
                "deepseek2.feed_forward_length": 128, "deepseek2.attention.head_count": 4,
                "deepseek2.attention.kv_lora_rank": 32, "deepseek2.rope.dimension_count": 8,
                "deepseek2.attention.key_length_mla": 24, "deepseek2.attention.value_length_mla": 16}
    config = gguf_config.dimensions_of(GGUFHeader(metadata=metadata, tensors=(), file_size=0), "ds.gguf")
    assert config["qk_nope_head_dim"] == 24 - 8 and config["v_head_dim"] == 16 and config["kv_lora_rank"] == 32


def test_no_loader_branches_on_an_architectures_name():
    """Per-architecture facts are the row's: no `arch == "..."` test in the GGUF loaders."""
    for found in pkgutil.walk_packages(loaders.__path__, "explorer.core.loaders."):
        source = inspect.getsource(importlib.import_module(found.name))
        assert not re.search(r'arch(itecture)? == "', source), found.name
