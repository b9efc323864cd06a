"""A family fact lives in its row (families.ModelFamily) and nowhere else: the model map's sandwich norms, the
way save_hf writes a model back, and the K/V heads a config.json leaves out. A row added in a test, with no
other edit, is followed by the map, by save_hf and by the model listing's head counts; the real rows are
checked against transformers' own configs and modules, and each weight conversion's declared inverse
against transformers' checkpoint tensors."""
from __future__ import annotations

import dataclasses
import subprocess
import sys

import pytest
import torch
import transformers  # the reference

from explorer.core import config_readers, families, weight_names, weights
from explorer.core.config import ModelConfig
from explorer.core.encdec_config import EncDecConfig
from explorer.core.errors import ExplorerError
from explorer.core.hf_keys import HFWriting, llama_keys
from explorer.core.model_summary import attention_variant, head_counts
from explorer.core.runtime import from_tensors
from explorer.core.save_hf import hf_config, writing_of
from explorer.views.model_graph import facts_of, model_graph
from tests.core.conftest import FAMILIES as TEST_FAMILIES
from tests.core.conftest import make_hf_model
from tests.core.test_gemma_families import tiny as tiny_gemma
from tests.core.test_phi3 import tiny_phi3

TOY = dict(model_type="toy", vocab_size=64, hidden_size=48, intermediate_size=64, num_hidden_layers=2,
           num_attention_heads=6, max_position_embeddings=32)


def _toy_reader(d: dict) -> dict:
    return config_readers.read_llama(d, "toy")


@pytest.fixture
def toy_row(monkeypatch):
    """A new family: Llama's blocks with sandwich norms, 3 K/V heads where config.json says none, its own writer."""
    row = dataclasses.replace(
        families.FAMILIES["llama"], model_type="toy", reader=_toy_reader, gguf=None, gguf_reader=None,
        gguf_weights=None, defaults={**families.FAMILIES["llama"].defaults, "num_key_value_heads": 3},
        sandwich_norm=True, writing=HFWriting("toy", "ToyForCausalLM", llama_keys))
    monkeypatch.setitem(families.FAMILIES, "toy", row)
    return row


def test_a_new_row_is_read_with_its_defaults_and_norms(toy_row):
    config = ModelConfig.from_hf(TOY)
    assert config.family == "toy"
    assert config.n_kv_heads == 3 and config.sandwich_norm


def test_a_new_row_is_followed_by_the_head_counts(toy_row):
    assert head_counts(TOY) == (6, 3)
    assert head_counts({**TOY, "num_key_value_heads": 2}) == (6, 2)      # a key that is there wins


def test_a_new_row_is_followed_by_the_model_map(toy_row):
    loaded = from_tensors(make_hf_model("llama").config.to_dict(), make_hf_model("llama").state_dict(), name="tiny")
    toy_info = dataclasses.replace(loaded.info, family="toy")
    assert not facts_of(loaded.info).sandwich
    assert facts_of(toy_info).sandwich
    drawn = model_graph(toy_info, None, tokens=3)
    assert len(drawn.of_kind("norm")) > len(model_graph(loaded.info, None, tokens=3).of_kind("norm"))


def test_a_new_row_is_followed_by_save_hf(toy_row, monkeypatch):
    config = ModelConfig.from_hf(TOY)
    written = hf_config(config)
    assert written["model_type"] == "toy" and written["architectures"] == ["ToyForCausalLM"]
    assert written["num_key_value_heads"] == 3
    loaded = type("Loaded", (), {"config": config, "name": "toy-model", "info": None})()
    assert writing_of(loaded) is toy_row.writing
    monkeypatch.setitem(families.FAMILIES, "toy", dataclasses.replace(toy_row, writing=None))
    with pytest.raises(ExplorerError, match=r"^save_hf writes llama, .*; toy-model is toy$"):
        writing_of(loaded)


@pytest.mark.parametrize("model_type", ["gemma", "gemma2", "mistral", "qwen2", "llama"])
def test_head_counts_of_a_config_without_kv_heads_are_transformers(model_type):
    """transformers' config class fills num_key_value_heads (GemmaConfig: 16, Gemma2Config: 4, ...)."""
    reference = transformers.AutoConfig.for_model(model_type, num_attention_heads=32)
    assert head_counts({"model_type": model_type, "num_attention_heads": 32}) == (32, reference.num_key_value_heads)


@pytest.mark.parametrize("family", sorted(TEST_FAMILIES) + ["gemma", "gemma2"])
def test_the_map_draws_sandwich_norms_where_transformers_has_them(family):
    hf = tiny_gemma(family, num_key_value_heads=2) if family in ("gemma", "gemma2") else make_hf_model(family)
    loaded = from_tensors(hf.config.to_dict(), hf.state_dict(), name=f"tiny-{family}")
    block = hf.base_model.h[0] if family == "gpt2" else hf.base_model.layers[0]
    assert facts_of(loaded.info).sandwich == hasattr(block, "post_feedforward_layernorm")
    with_config = facts_of(loaded.info, dataclasses.asdict(loaded.config))
    assert with_config.sandwich == hasattr(block, "post_feedforward_layernorm")


@pytest.mark.parametrize("family", ["gpt2", "phi3", "deepseek_v3"])
def test_each_weight_conversion_is_declared_with_its_inverse(family):
    """save_hf joins a model's parts by the table's declared join: on transformers' own checkpoint tensors,
    split then join gives each tensor back exactly (GPT-2's Conv1D, Phi-3's fused qkv and gate|up, experts)."""
    hf = tiny_phi3() if family == "phi3" else make_hf_model(family)
    row = families.FAMILIES[ModelConfig.from_hf(hf.config.to_dict()).family]
    rules = weights._compile(row.weights)
    converted = 0
    for name, tensor in weights._normalized_names(dict(hf.state_dict())).items():
        for pattern, _targets, layout in rules:
            if pattern.match(name) and layout != weight_names.SAME:
                assert torch.equal(weights.join(layout, weights.split(layout, tensor)), tensor), name
                converted += 1
    assert converted > 0


def test_the_encoder_decoder_reader_is_a_plain_import_of_a_light_module():
    """The row holds the encoder-decoder's reader itself (import tools see families -> encdec_config), and the
    family table still imports neither torch nor the engine, so every layer may read it."""
    assert families.FAMILIES["explorer-encdec"].reader is EncDecConfig.from_json
    loaded = subprocess.run(
        [sys.executable, "-c", "import sys, explorer.core.families; "
         "print(sorted(m for m in ('torch', 'explorer.core.encdec', 'explorer.core.config') if m in sys.modules))"],
        capture_output=True, text=True, check=True).stdout.strip()
    assert loaded == "[]"


@pytest.mark.parametrize("family", sorted(TEST_FAMILIES))
def test_the_listing_and_the_engine_name_one_attention_kind(family):
    """The model listing (from config.json alone) and the built model's config give the attention kind that
    transformers' config says: MLA with a kv_lora_rank, else MHA, MQA or GQA by N_KV against N_Q."""
    hf_config = make_hf_model(family).config
    n_q = hf_config.num_attention_heads if family != "gpt2" else hf_config.n_head
    n_kv = getattr(hf_config, "num_key_value_heads", None) or n_q
    expected = "mla" if getattr(hf_config, "kv_lora_rank", None) else (
        "mha" if n_kv == n_q else "mqa" if n_kv == 1 else "gqa")
    assert attention_variant(hf_config.to_dict()) == expected
    assert ModelConfig.from_hf(hf_config.to_dict()).attention_kind == expected
