"""Which attention kind a model has (MHA, GQA, MQA or MLA) is one rule, config.attention_kind. The KV table
(kv_variants), the what-if conversion (convert) and the trained variants (train.variants) name every variant
they produce by it, so each is
checked here against transformers' own notion: the K/V heads its cache holds against num_attention_heads, and
MLA where the config has a kv_lora_rank. A second copy of the rule that drifted fails here."""
from __future__ import annotations

import pytest
import torch
import transformers  # the reference

from explorer.core import kv_variants as kv
from explorer.core.config import ModelConfig
from explorer.core.convert import convert
from explorer.core.runtime import from_tensors
from explorer.train import variants as trained
from tests.core.conftest import FAMILIES as TEST_FAMILIES
from tests.core.conftest import make_hf_model

TOKENS = torch.tensor([[1, 2, 3, 4, 5]])


def transformers_cache(model: torch.nn.Module) -> tuple[int, int]:
    """(K/V heads, elements per token) of layer 0 of the cache transformers keeps after a forward pass."""
    with torch.no_grad():
        layer = model(TOKENS, use_cache=True).cache.layers[0]
    _, heads, tokens, _ = layer.keys.shape                                   # (B, N_KV, T, d_k)
    return heads, (layer.keys[0].numel() + layer.values[0].numel()) // tokens


def transformers_kind(model: torch.nn.Module) -> str:
    """MLA where the config has a latent (kv_lora_rank); else by transformers' cache heads against N_Q."""
    config = model.config
    if getattr(config, "kv_lora_rank", None):
        return "mla"
    n_q = config.num_attention_heads
    n_kv, _ = transformers_cache(model)
    if n_kv == n_q:                # one head is MHA: every query head has its own K and V
        return "mha"
    return "mqa" if n_kv == 1 else "gqa"


def llama(n_q: int, n_kv: int) -> torch.nn.Module:
    config = transformers.LlamaConfig(vocab_size=32, hidden_size=8 * n_q, intermediate_size=16, num_hidden_layers=1,
                                      num_attention_heads=n_q, num_key_value_heads=n_kv, head_dim=8,
                                      max_position_embeddings=16)
    return transformers.LlamaForCausalLM(config).eval()


@pytest.mark.parametrize("family", sorted(TEST_FAMILIES))
def test_the_kv_tables_native_variant_is_transformers_kind(family):
    model = make_hf_model(family)
    native = kv.native_variant(kv.cache_shape(model.config.to_dict()))
    assert native.kind == transformers_kind(model)
    if native.kind != "mla":
        heads, elements = transformers_cache(model)
        assert (native.kv_heads, native.elements_per_layer) == (heads, elements)


@pytest.mark.parametrize("n_q", [1, 4, 12])
def test_every_head_count_of_the_kv_table_is_transformers_kind(n_q):
    """Each MHA/GQA/MQA row of the table, built as a transformers Llama with that many K/V heads, has the
    kind, the K/V heads and the cached elements per token of transformers' cache."""
    shape = kv.shape_from_config(ModelConfig.from_hf(llama(n_q, 1).config.to_dict()))
    rows = [v for v in kv.variants(shape) if v.kv_heads is not None]
    assert sorted(v.kv_heads for v in rows) == [g for g in range(1, n_q + 1) if n_q % g == 0]
    for variant in rows:
        model = llama(n_q, variant.kv_heads)
        assert variant.kind == transformers_kind(model), variant.name
        assert (variant.kv_heads, variant.elements_per_layer) == transformers_cache(model)
        assert variant.name.startswith(variant.kind)


def test_each_head_count_conversion_is_named_and_built_as_transformers_kind():
    """The what-if conversion of a 12-head MHA model to each other row of the table gives a model of that
    row's name, whose K/V heads make transformers' kind of the same name."""
    hf = llama(12, 12)
    loaded = from_tensors(hf.config.to_dict(), hf.state_dict(), name="tiny-llama-12")
    rows = [v for v in kv.variants(kv.shape_from_config(loaded.config)) if v.kv_heads is not None and not v.native]
    assert [v.kind for v in rows] == ["gqa"] * 4 + ["mqa"]
    for variant in rows:
        converted = convert(loaded, variant.name)
        assert converted.variant == variant.name
        assert converted.loaded.config.n_kv_heads == variant.kv_heads
        assert transformers_kind(llama(12, variant.kv_heads)) == converted.loaded.config.attention_kind == variant.kind


def test_the_kv_tables_latent_variants_are_mla_at_their_rank():
    shape = kv.cache_shape(make_hf_model("deepseek_v2").config.to_dict())
    latent = [v for v in kv.variants(shape, ranks=[8, 32]) if v.kv_heads is None]
    assert {(v.kind, v.latent_rank) for v in latent} == {("mla", 8), ("mla", 16), ("mla", 32)}


@pytest.mark.parametrize("kind", trained.ATTENTION_KINDS)
def test_each_trained_variant_is_the_kind_it_is_named(kind):
    """train.variants' config for `kind` is that kind to transformers, to the engine and to the KV table, and
    its cache elements per token are transformers' (MLA: its latent d_c plus the RoPE key d_R)."""
    config = trained.model_config(kind, vocab_size=64)
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config).eval()
    assert transformers_kind(model) == kind
    assert ModelConfig.from_hf(config.to_dict()).attention_kind == kind
    assert kv.native_variant(kv.cache_shape(config.to_dict())).kind == kind
    expected = (config.kv_lora_rank + config.qk_rope_head_dim if kind == "mla"
                else transformers_cache(model)[1])
    assert trained.kv_elements_per_token_per_layer(config.to_dict()) == expected
