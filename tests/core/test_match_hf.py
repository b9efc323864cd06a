"""Our engine against transformers' eager attention, family by family, in float32.

Logits must agree within 1e-4 of the largest logit and every layer's attention
weights within 1e-5, on prompts longer than the sliding windows.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

from explorer.core.capture import StepCapture
from explorer.core.rope import Rotary

T = 14


def _prompt(seed: int = 1) -> torch.Tensor:
    return torch.randint(0, 96, (T,), generator=torch.Generator().manual_seed(seed))


def _reference(hf_model, ids):
    with torch.inference_mode():
        out = hf_model(ids[None], output_attentions=True)
    return out.logits[0], [a[0] for a in out.attentions]


@pytest.mark.parametrize("rope_by", ["matrices", "cos_sin"])
def test_logits_and_attention_match_transformers(family, hf_model, loaded, rope_by, monkeypatch):
    # A decoding step rotates by R_p matrices, a long prefill by cos/sin: both must be exact.
    monkeypatch.setattr(Rotary, "MATRICES_UP_TO", T if rope_by == "matrices" else 0)
    ids = _prompt()
    ref_logits, ref_attn = _reference(hf_model, ids)
    capture = StepCapture(loaded.config.n_layers)
    with torch.inference_mode():
        logits = loaded.model.logits(loaded.model(ids, np.arange(T), None, capture))
    scale = ref_logits.abs().max()
    assert ((logits - ref_logits).abs().max() / scale).item() < 1e-4
    for layer, reference in enumerate(ref_attn):
        weights = capture.layers[layer].attn.weights
        assert weights.shape == reference.shape
        assert (weights - reference).abs().max().item() < 1e-5, f"layer {layer}"


def test_a_wrong_weight_is_noticed(hf_model, family):
    """The comparison can fail: one perturbed weight breaks the match."""
    from explorer.core.runtime import from_tensors

    tensors = {k: v.clone() for k, v in hf_model.state_dict().items()}
    name = next(k for k in tensors if k.endswith("layers.1.input_layernorm.weight") or k.endswith("h.1.ln_1.weight"))
    tensors[name] += 0.5
    loaded = from_tensors(hf_model.config.to_dict(), tensors)
    ids = _prompt()
    ref_logits, _ = _reference(hf_model, ids)
    with torch.inference_mode():
        logits = loaded.model.logits(loaded.model(ids, np.arange(T)))
    assert ((logits - ref_logits).abs().max() / ref_logits.abs().max()).item() > 1e-4


@pytest.mark.parametrize("family", ["llama", "llama_mqa", "mistral", "qwen2", "qwen3", "gemma3", "deepseek_v2",
                                    "deepseek_v3"])            # every family but GPT-2 (learned positions)
def test_transformers4_style_config_loads_the_same(family, hf_model):
    """rope_theta/rope_scaling (transformers 4) and rope_parameters (5) give the same config."""
    from explorer.core.config import ModelConfig

    new = hf_model.config.to_dict()
    old = dict(new)
    params = old.pop("rope_parameters", None)
    assert params, f"{family} has RoPE: transformers 5 writes rope_parameters"
    if "full_attention" in params:                 # Gemma 3 nests it per layer type
        old["rope_theta"] = params["full_attention"]["rope_theta"]
        old["rope_local_base_freq"] = params["sliding_attention"]["rope_theta"]
        old["rope_scaling"] = None
    else:
        old["rope_theta"] = params["rope_theta"]
        old["rope_scaling"] = None if params.get("rope_type", "default") == "default" else dict(params)
    assert ModelConfig.from_hf(old) == ModelConfig.from_hf(new)


@pytest.mark.parametrize("family", ["qwen2", "gpt2"])
def test_bad_checkpoints_fail_with_one_sentence(hf_model):
    from explorer.core.errors import ModelLoadError, UnsupportedModelError
    from explorer.core.runtime import from_tensors

    config, good = hf_model.config.to_dict(), hf_model.state_dict()
    name = next(k for k in good if k.endswith("0.mlp.c_fc.weight") or k.endswith("0.mlp.up_proj.weight"))
    missing = {k: v for k, v in good.items() if k != name}
    extra = {**good, "model.layers.0.mlp.surprise.weight": torch.zeros(3)}
    wrong_shape = {**good, name: torch.zeros(3, 3)}
    integer = {**good, name: good[name].to(torch.int32)}
    for tensors, words in ((missing, "lacks"), (extra, "surprise"), (wrong_shape, "shape"), (integer, "dtype")):
        with pytest.raises(ModelLoadError, match=words) as error:
            from_tensors(config, tensors, name="ckpt-x")
        assert "ckpt-x" in str(error.value) and "\n" not in str(error.value)
    with pytest.raises(UnsupportedModelError, match="bert"):
        from_tensors({**config, "model_type": "bert"}, good)
