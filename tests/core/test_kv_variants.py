"""The KV-cache comparison table: byte formulas, layer kinds, the paged view, and the DeepSeek-V2 paper."""
import csv
import io
import json
import math
from pathlib import Path

import numpy as np
import pytest
import transformers  # the reference
from hypothesis import given, settings
from hypothesis import strategies as st

from explorer.core import kv_variants as kv
from explorer.core.errors import ModelLoadError, UnsupportedModelError

CONFIGS = Path(__file__).resolve().parents[2] / "resources" / "configs"


def shape_of(name: str) -> kv.CacheShape:
    return kv.cache_shape(json.loads((CONFIGS / name / "config.json").read_text()))


def by_name(rows):
    return {row.variant.name: row for row in rows}


def test_llama3_70b_is_gqa_8_with_every_divisor_of_64_heads():
    shape = shape_of("llama3-70b")
    rows = by_name(kv.compare(shape, tokens=8192, dtype="bfloat16"))
    assert [r for r in rows if not r.startswith("mla")] == [
        "mha", "gqa-32", "gqa-16", "gqa-8", "gqa-4", "gqa-2", "mqa"]
    assert [name for name, row in rows.items() if row.variant.native] == ["gqa-8"]
    assert rows["gqa-8"].variant.elements_per_layer == 2 * 8 * 128
    assert rows["gqa-8"].bytes_per_token == 2 * 8 * 128 * 80 * 2          # 327,680 B = 320 KiB
    assert rows["gqa-8"].bytes_total == 327_680 * 8192                    # 2.5 GiB
    assert rows["mha"].bytes_per_token == 2 * 64 * 128 * 80 * 2
    assert rows["mqa"].bytes_per_token == 2 * 128 * 80 * 2


def test_deepseek_v2_matches_the_papers_kv_cache_comparison():
    """DeepSeek-V2, Table 1: MLA caches (d_c + d_R) l = (9/2) d_h l, MHA 2 n_h d_h l."""
    shape = shape_of("deepseek-v2")
    d_h, n_h, layers = 128, 128, 60
    rows = by_name(kv.compare(shape, tokens=1, dtype="float32"))
    mla = rows["mla-512"]
    assert mla.variant.native and mla.variant.kv_heads is None
    assert mla.variant.elements_per_layer == 512 + 64 == 4 * d_h + d_h // 2 == 576
    assert mla.bytes_per_token == 576 * layers * 4
    assert rows["mha"].variant.elements_per_layer == 2 * n_h * d_h
    # "equal to GQA with only 2.25 groups"
    assert mla.variant.elements_per_layer / (2 * d_h) == 2.25
    assert mla.ratio_to_mha == pytest.approx(576 / 32768)


def test_gemma3_27b_has_52_local_and_10_global_layers_and_local_caches_stop_at_the_window():
    shape = shape_of("gemma3-27b")
    assert shape.layer_kinds.count("sliding") == 52 and shape.layer_kinds.count("full") == 10
    assert all(shape.windows[i] is None for i in range(5, 62, 6))
    native = kv.native_variant(shape)
    assert native.name == "gqa-16" and native.elements_per_layer == 2 * 16 * 128
    per_layer = 2 * 16 * 128 * 2                                            # bfloat16
    assert native.bytes_total(shape, 1000, "bfloat16") == 62 * 1000 * per_layer
    assert native.bytes_total(shape, 131072, "bfloat16") == (10 * 131072 + 52 * 1024) * per_layer
    tokens = np.array([0, 1, 1024, 1025, 5000])
    curve = native.bytes_curve(shape, tokens, "bfloat16")
    assert curve.tolist() == [native.bytes_total(shape, int(t), "bfloat16") for t in tokens]


def test_gemma3_layer_types_and_the_older_pattern_agree():
    d = transformers.Gemma3TextConfig(num_hidden_layers=14, sliding_window=32).to_dict()
    old_style = {k: v for k, v in d.items() if k != "layer_types"} | {"sliding_window_pattern": 6}
    assert kv.cache_shape(d).windows == kv.cache_shape(old_style).windows
    assert kv.cache_shape(d).windows[5] is None and kv.cache_shape(d).windows[0] == 32


def test_mistral_slides_every_layer_and_qwen_only_when_asked():
    base = dict(num_hidden_layers=4, num_attention_heads=8, num_key_value_heads=2, hidden_size=64,
                max_position_embeddings=512)
    assert kv.cache_shape({"model_type": "mistral", "sliding_window": 16, **base}).windows == (16,) * 4
    assert kv.cache_shape({"model_type": "mistral", "sliding_window": None, **base}).windows == (None,) * 4
    qwen = {"model_type": "qwen2", "sliding_window": 16, "max_window_layers": 2, **base}
    assert kv.cache_shape(qwen).windows == (None,) * 4
    assert kv.cache_shape({**qwen, "use_sliding_window": True}).windows == (None, None, 16, 16)


def test_qwen3_head_dim_need_not_be_d_model_over_heads():
    shape = kv.cache_shape({"model_type": "qwen3", "num_hidden_layers": 2, "num_attention_heads": 4,
                            "num_key_value_heads": 1, "hidden_size": 64, "head_dim": 32,
                            "max_position_embeddings": 128})
    assert shape.native == "mqa" and shape.d_k == 32
    assert kv.native_variant(shape).bytes_per_token(shape, "int8") == 2 * 32 * 2


def test_gpt2_and_bert_are_mha_without_a_rope_key():
    gpt2 = kv.cache_shape({"model_type": "gpt2", "n_layer": 12, "n_head": 12, "n_embd": 768, "n_positions": 1024})
    assert gpt2.native == "mha" and not gpt2.rope
    rows = by_name(kv.compare(gpt2, ranks=[128]))
    assert rows["mla-128"].variant.elements_per_layer == 128 and rows["mla-128"].variant.rope_dim == 0
    assert [r for r in rows if r.startswith("gqa")] == ["gqa-6", "gqa-4", "gqa-3", "gqa-2"]
    bert = kv.cache_shape({"model_type": "bert", "num_hidden_layers": 2, "num_attention_heads": 4,
                           "hidden_size": 32, "max_position_embeddings": 64})
    assert bert.native == "mha" and bert.max_positions == 64


def test_mla_for_a_rope_model_adds_a_decoupled_key_of_half_a_head():
    shape = shape_of("llama3-70b")
    rows = by_name(kv.compare(shape, ranks=[512, 256]))
    assert rows["mla-512"].variant.elements_per_layer == 512 + 64
    assert list(rows).count("mla-256") == 1 and "mla-1024" not in rows   # --rank replaces the defaults


def test_defaults_are_the_context_length_and_the_totals_scale_with_dtype():
    shape = shape_of("llama3-70b")
    rows = {d: by_name(kv.compare(shape, dtype=d)) for d in ("float32", "bfloat16", "int8")}
    assert rows["float32"]["gqa-8"].tokens == 8192
    assert rows["float32"]["gqa-8"].bytes_total == 2 * rows["bfloat16"]["gqa-8"].bytes_total \
        == 4 * rows["int8"]["gqa-8"].bytes_total


@pytest.mark.parametrize("config, error", [
    ({"model_type": "t5", "num_layers": 2}, UnsupportedModelError),
    ({"model_type": "llama", "num_attention_heads": 4, "hidden_size": 32, "max_position_embeddings": 8},
     ModelLoadError),
    ({"model_type": "llama", "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 3,
      "hidden_size": 32, "max_position_embeddings": 8}, ModelLoadError),
    ({"model_type": "deepseek_v2", "num_hidden_layers": 2, "num_attention_heads": 4,
      "max_position_embeddings": 8}, ModelLoadError),
])
def test_bad_configs_name_the_problem(config, error):
    with pytest.raises(error, match="config"):
        kv.cache_shape(config)


def test_unknown_dtype_and_bad_rank_are_refused():
    shape = shape_of("llama3-70b")
    with pytest.raises(ModelLoadError, match="float8"):
        kv.compare(shape, dtype="float8")
    with pytest.raises(ModelLoadError, match="rank 0"):
        kv.compare(shape, ranks=[0])


@settings(max_examples=60, deadline=None)
@given(tokens=st.integers(0, 5000), block=st.integers(1, 64), window=st.integers(1, 700))
def test_paged_blocks_are_ceil_of_tokens_held_over_block_size(tokens, block, window):
    shape = kv.CacheShape("mistral", 3, 4, 2, 8, 8, (None, window, None), 8192, True)
    variant = kv.native_variant(shape)
    layout = kv.paged_layout(shape, variant, tokens, "float32", block)
    held = [tokens, min(tokens, window), tokens]
    assert layout.blocks_per_layer.tolist() == [math.ceil(h / block) for h in held]
    assert layout.tokens_per_layer.tolist() == held
    assert np.all(layout.last_block_fill <= block) and np.all(layout.last_block_fill >= 0)
    assert layout.last_block_fill.tolist() == [(h - 1) % block + 1 if h else 0 for h in held]
    assert layout.bytes_in_use.sum() == variant.bytes_total(shape, tokens, "float32")
    assert np.all(layout.bytes_allocated >= layout.bytes_in_use)
    slots = sum(math.ceil(h / block) for h in held) * block
    assert layout.fragmentation == pytest.approx(0.0 if slots == 0 else (slots - sum(held)) / slots)


def test_paged_fragmentation_of_a_known_case():
    shape = kv.CacheShape("llama", 2, 4, 4, 8, 8, (None, None), 64, True)
    layout = kv.paged_layout(shape, kv.native_variant(shape), 17, "float32", 16)
    assert layout.blocks_per_layer.tolist() == [2, 2]
    assert layout.fragmentation == pytest.approx(15 / 32)
    assert layout.bytes_per_block == 16 * 2 * 4 * 8 * 4
    with pytest.raises(ModelLoadError, match="Block size"):
        kv.paged_layout(shape, kv.native_variant(shape), 17, "float32", 0)


def test_csv_export_has_one_row_per_variant_and_marks_the_native_one():
    shape = shape_of("deepseek-v2")
    rows = kv.compare(shape, tokens=100, dtype="int8")
    table = list(csv.DictReader(io.StringIO(kv.to_csv(rows))))
    assert [r["variant"] for r in table] == [r.variant.name for r in rows]
    assert [r["variant"] for r in table if r["native"] == "True"] == ["mla-512"]
    assert int(table[-1]["bytes_total"]) == 576 * 60 * 100


def test_text_table_marks_the_native_variant():
    shape = shape_of("gemma3-27b")
    text = kv.format_table(shape, kv.compare(shape, tokens=4096), "gemma3-27b")
    marked = [line for line in text.splitlines() if line.startswith("* ") and "own variant" not in line]
    assert len(marked) == 1 and marked[0].split()[1] == "gqa-16"
    assert "52 sliding W=1024, 10 full" in text


# ----- the formulas against the engine's real caches ------------------------------------

ENGINE_FAMILIES = {
    "gpt2 (MHA)": ("gpt2", {}),
    "llama (GQA)": ("llama", {}),
    "qwen2 (MQA)": ("qwen2", {"num_key_value_heads": 1}),
    "gemma3 (sliding + global)": ("gemma3", {}),
    "deepseek_v2 (MLA)": ("deepseek_v2", {}),
}


def tiny_loaded(family: str, overrides: dict):
    from explorer.core.runtime import from_tensors
    from tests.core.conftest import FAMILIES

    config_name, model_name, kwargs = FAMILIES[family]
    config = getattr(transformers, config_name)(**{**kwargs, **overrides})
    model = getattr(transformers, model_name)._from_config(config, attn_implementation="eager")
    return config.to_dict(), from_tensors(config.to_dict(), model.state_dict(), name=family)


@pytest.mark.parametrize("label", sorted(ENGINE_FAMILIES))
def test_formula_bytes_equal_the_engines_measured_cache(label):
    from explorer.core.decode import Decoder

    family, overrides = ENGINE_FAMILIES[label]
    config, loaded = tiny_loaded(family, overrides)
    shape = kv.cache_shape(config)
    native = kv.native_variant(shape)
    assert native.kind == loaded.config.attention_kind
    decoder = Decoder(loaded)
    trace = decoder.prefill(np.arange(9) % 50)                # longer than Gemma's window of 5
    for n_tokens in (9, 10, 11):
        per_layer = trace.kv_bytes_in_use()
        expected = shape.tokens_held(n_tokens) * native.elements_per_layer * 4
        assert per_layer.tolist() == expected.tolist(), n_tokens
        assert int(per_layer.sum()) == native.bytes_total(shape, n_tokens, "float32")
        trace = decoder.step()
    layout_before = kv.paged_layout(shape, native, trace.n_tokens, "float32", block_size=4)
    decoder.step()
    trace = decoder.back()                                    # Back returns to exactly the previous occupancy
    assert trace.kv_bytes_in_use().tolist() == layout_before.bytes_in_use.tolist()


@pytest.mark.parametrize("label", ["gemma3 (sliding + global)", "deepseek_v2 (MLA)", "llama (GQA)"])
def test_the_loaded_models_info_gives_the_same_shape_as_its_config(label):
    family, overrides = ENGINE_FAMILIES[label]
    config, loaded = tiny_loaded(family, overrides)
    from_config, from_info = kv.cache_shape(config), kv.shape_from_info(loaded.info)
    assert from_info.windows == from_config.windows
    assert kv.native_variant(from_info) == kv.native_variant(from_config)
    assert [v.elements_per_layer for v in kv.variants(from_info)] == \
        [v.elements_per_layer for v in kv.variants(from_config)]
