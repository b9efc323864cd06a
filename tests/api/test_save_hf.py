"""model.save_hf(folder) loads in transformers (AutoModelForCausalLM) with logits equal within 1e-4.

The reference is transformers reading the written folder; the model written is the explorer's (built
from a random transformers model, a bundled model, or a GGUF file), so nothing is compared with itself.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch
import transformers

import explorer
from tests.api.test_match_hf import PROMPT
from tests.core.conftest import BASE, FAMILIES, randomize

WALKTHROUGH = "When Mary and John went to the store, John gave a drink to"


def hf_logits(folder, ids) -> np.ndarray:
    loaded = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
    with torch.inference_mode():
        return loaded.eval()(torch.as_tensor(ids)[None]).logits[0].numpy()


def relative_error(ours: np.ndarray, theirs: np.ndarray) -> float:
    return float(np.abs(ours - theirs).max() / np.abs(theirs).max())


def explorer_model(config_name: str, model_name: str, kwargs: dict, seed: int = 0) -> explorer.Model:
    """An explorer.Model of a random transformers model built from its config class."""
    from explorer.core.runtime import from_tensors

    config = getattr(transformers, config_name)(**kwargs)
    torch.manual_seed(seed)
    hf_model = getattr(transformers, model_name)._from_config(config, attn_implementation="eager")
    randomize(hf_model, seed)
    return explorer.Model(from_tensors(hf_model.config.to_dict(), hf_model.state_dict(), name=model_name))


@pytest.mark.parametrize("family", ["llama", "llama_mqa", "mistral", "qwen2", "qwen3", "gpt2", "gemma3",
                                    "deepseek_v2", "deepseek_v3"])
def test_a_saved_tiny_model_gives_the_same_logits_in_transformers(family, model, tmp_path):
    run = model.run(PROMPT)
    model.save_hf(tmp_path / "saved")
    assert relative_error(run.logits, hf_logits(tmp_path / "saved", run.ids)) < 1e-4


MLA_V3 = FAMILIES["deepseek_v3"][2]
OPTIONS = {     # the config.json keys a family writes only when the model has the option
    "qwen2 window": ("Qwen2Config", "Qwen2ForCausalLM", dict(
        BASE, num_key_value_heads=2, use_sliding_window=True, sliding_window=4, max_window_layers=1)),
    "qwen3 window": ("Qwen3Config", "Qwen3ForCausalLM", dict(
        BASE, num_key_value_heads=2, use_sliding_window=True, sliding_window=3, max_window_layers=0)),
    "phi3": ("Phi3Config", "Phi3ForCausalLM", dict(BASE, bos_token_id=1, eos_token_id=2, pad_token_id=0)),
    "phi3 window": ("Phi3Config", "Phi3ForCausalLM", dict(BASE, sliding_window=4, pad_token_id=None)),
    "gemma3 final soft-cap": ("Gemma3TextConfig", "Gemma3ForCausalLM", dict(
        BASE, num_key_value_heads=1, head_dim=16, query_pre_attn_scalar=20, sliding_window=4,
        final_logit_softcapping=5.0, rope_theta=5e4, rope_local_base_freq=500.0,
        layer_types=["full_attention", "sliding_attention"], tie_word_embeddings=False)),
    "gemma3 global layers": ("Gemma3TextConfig", "Gemma3ForCausalLM", dict(
        BASE, num_key_value_heads=2, head_dim=16, sliding_window=3, layer_types=["full_attention"] * 2)),
    "gemma3 linear rope": ("Gemma3TextConfig", "Gemma3ForCausalLM", dict(
        BASE, num_key_value_heads=2, head_dim=16, sliding_window=5, rope_scaling={"rope_type": "linear",
                                                                                  "factor": 4.0})),
    "gemma": ("GemmaConfig", "GemmaForCausalLM", dict(BASE, num_key_value_heads=1, head_dim=16,
                                                      tie_word_embeddings=True)),
    "gemma2 window and soft-caps": ("Gemma2Config", "Gemma2ForCausalLM", dict(
        BASE, num_key_value_heads=2, head_dim=16, query_pre_attn_scalar=20, sliding_window=4,
        attn_logit_softcapping=2.0, final_logit_softcapping=4.0)),
    "gemma2 global layers without caps": ("Gemma2Config", "Gemma2ForCausalLM", dict(
        BASE, num_key_value_heads=1, head_dim=16, sliding_window=4, layer_types=["full_attention"] * 2,
        attn_logit_softcapping=None, final_logit_softcapping=None, tie_word_embeddings=False)),
    "deepseek_v3 yarn": ("DeepseekV3Config", "DeepseekV3ForCausalLM", dict(
        MLA_V3, rope_scaling={"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 16,
                              "beta_fast": 32, "beta_slow": 1, "mscale": 1.0, "mscale_all_dim": 1.0})),
    "deepseek_v3 attention bias": ("DeepseekV3Config", "DeepseekV3ForCausalLM", dict(
        MLA_V3, attention_bias=True, q_lora_rank=None, rope_interleave=False)),
}


@pytest.mark.parametrize("option", sorted(OPTIONS))
def test_a_family_option_survives_the_round_trip(option, tmp_path):
    model = explorer_model(*OPTIONS[option])
    run = model.run(PROMPT)
    model.save_hf(tmp_path / "saved")
    assert relative_error(run.logits, hf_logits(tmp_path / "saved", run.ids)) < 1e-4


def test_a_model_converted_to_fewer_kv_heads_is_saved_as_what_it_now_is(tmp_path):
    """The KV lab's mean-pooled MQA copy of a GQA model is a Llama with one K/V head: saved, it gives the
    converted model's logits (not the original's)."""
    from explorer.core.convert import convert

    original = explorer_model(*FAMILIES["llama"])
    converted = explorer.Model(convert(original.loaded, "mqa").loaded)
    run = converted.run(PROMPT)
    assert relative_error(run.logits, original.run(PROMPT).logits) > 1e-3       # pooling changed the model
    converted.save_hf(tmp_path / "mqa")
    assert relative_error(run.logits, hf_logits(tmp_path / "mqa", run.ids)) < 1e-4


def test_a_model_converted_to_mla_is_refused_in_one_sentence(tmp_path):
    """A Llama whose attention became MLA has weights no Llama checkpoint holds."""
    from explorer.core.convert import convert

    converted = explorer.Model(convert(explorer_model(*FAMILIES["llama"]).loaded, "mla-16").loaded)
    with pytest.raises(explorer.ExplorerError, match=r"^save_hf cannot write .*: its weight layers\.0\.attn\.[\w.]+ "
                                                     r"has no place in a llama checkpoint$"):
        converted.save_hf(tmp_path / "saved")
    assert not (tmp_path / "saved").exists()


def test_a_config_json_cannot_state_is_refused_in_one_sentence(tmp_path):
    """A score scale other than 1/sqrt(d_head) has no Llama config.json key: refused, not written wrong."""
    from dataclasses import replace

    model = explorer_model(*FAMILIES["llama"])
    model.loaded.config = replace(model.loaded.config, attn_scale=0.5)
    with pytest.raises(explorer.ExplorerError, match=r"config\.json cannot say its attn_scale \(0\.5; a llama "
                                                     r"config gives 0\.25\)"):
        model.save_hf(tmp_path / "saved")
    assert not (tmp_path / "saved").exists()


def test_a_gemma3_with_an_attention_soft_cap_is_refused_in_one_sentence(tmp_path):
    """transformers' Gemma 3 reads attn_logit_softcapping but never applies it (Gemma 2 does), so the folder
    would be another model. (The config reader leaves Gemma 3's key out likewise: the cap is set on the model.)"""
    from dataclasses import replace

    model = explorer_model(*FAMILIES["gemma3"])
    model.loaded.config = replace(model.loaded.config, attn_softcap=3.0)
    with pytest.raises(explorer.ExplorerError, match=r"^save_hf cannot write a Gemma 3 whose attention scores are "
                                                     r"soft-capped \(3\.0\): .* ignores attn_logit_softcapping$"):
        model.save_hf(tmp_path / "saved")


def test_a_family_it_does_not_write_is_refused_in_one_sentence(tmp_path):
    translator = explorer.load("translate-en-zh")
    with pytest.raises(explorer.ExplorerError, match=r"^save_hf writes llama, .*deepseek_v3 models; "
                                                     r"translate-en-zh is encdec$"):
        translator.save_hf(tmp_path / "saved")


def check_saved_model(model: explorer.Model, folder) -> None:
    """The folder's logits equal the model's, and transformers' tokenizer gives the ids the model runs."""
    run = model.run(WALKTHROUGH)
    model.save_hf(folder)
    assert {"config.json", "model.safetensors", "tokenizer.json"} <= {p.name for p in folder.iterdir()}
    assert relative_error(run.logits, hf_logits(folder, run.ids)) < 1e-4
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
    assert tokenizer(WALKTHROUGH).input_ids == [int(i) for i in run.ids]


def test_the_bundled_mla_model_saved_loads_as_deepseek_v3_with_its_tokenizer(tmp_path):
    model = explorer.load("shakespeare-mla")
    check_saved_model(model, tmp_path / "mla")
    assert transformers.AutoConfig.from_pretrained(tmp_path / "mla").model_type == "deepseek_v3"


@pytest.mark.realmodel
def test_smollm2_from_gguf_saved_loads_in_transformers_with_equal_logits(tmp_path):
    from explorer.core.store import pulled_path

    if pulled_path("smollm2-135m") is None:
        pytest.skip("smollm2-135m is not pulled (python -m explorer pull smollm2-135m)")
    model = explorer.load("smollm2-135m")
    check_saved_model(model, tmp_path / "smollm2")
    tokenizer = transformers.AutoTokenizer.from_pretrained(tmp_path / "smollm2")
    assert tokenizer(" Mary", add_special_tokens=False).input_ids == [model.to_single_token(" Mary")]


@pytest.mark.realmodel
def test_gemma3_270m_from_gguf_saved_loads_in_transformers_with_equal_logits(tmp_path):
    """Gemma 3's GGUF stores every RMSNorm weight as 1 + w and the engine puts BOS before a prompt: the
    folder holds w again, and its tokenizer puts BOS first too."""
    from explorer.core.store import pulled_path

    if pulled_path("gemma3-270m") is None:
        pytest.skip("gemma3-270m is not pulled (python -m explorer pull gemma3-270m --accept-license)")
    model = explorer.load("gemma3-270m")
    check_saved_model(model, tmp_path / "gemma3")
    assert transformers.AutoConfig.from_pretrained(tmp_path / "gemma3").model_type == "gemma3_text"
