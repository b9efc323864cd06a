"""Phi-3, added as one family row (explorer/core/families.py): logits and attention match transformers'
eager Phi3ForCausalLM in float32, with and without its sliding window."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import transformers

from explorer.core.capture import StepCapture
from explorer.core.errors import ModelLoadError
from explorer.core.runtime import from_tensors
from tests.core.conftest import BASE, randomize

T = 14


def tiny_phi3(**overrides):
    config = transformers.Phi3Config(**{**BASE, "pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2, **overrides})
    torch.manual_seed(0)
    model = transformers.Phi3ForCausalLM._from_config(config, attn_implementation="eager")
    randomize(model, 0)
    return model.eval()


@pytest.mark.parametrize("window", [None, 5])
def test_phi3_logits_and_attention_match_transformers(window):
    hf = tiny_phi3(sliding_window=window)
    loaded = from_tensors(hf.config.to_dict(), hf.state_dict(), name="tiny-phi3")
    ids = torch.randint(0, BASE["vocab_size"], (T,), generator=torch.Generator().manual_seed(1))
    capture = StepCapture(loaded.config.n_layers)
    with torch.inference_mode():
        out = hf(ids[None], output_attentions=True)
        logits = loaded.model.logits(loaded.model(ids, np.arange(T), None, capture))
    reference = out.logits[0]
    assert ((logits - reference).abs().max() / reference.abs().max()).item() < 1e-4
    for layer, attention in enumerate(out.attentions):
        assert capture.layers[layer].attn.weights.shape == attention[0].shape
        assert (capture.layers[layer].attn.weights - attention[0]).abs().max().item() < 1e-5, f"layer {layer}"


@pytest.mark.parametrize("kv_heads", [2, 1])
def test_a_phi3_with_fewer_kv_heads_matches_transformers(kv_heads):
    """GQA and MQA Phi-3 (Phi-3-medium has 10 K/V heads for 40 query heads): the fused qkv_proj is split into
    N_Q d_h, N_KV d_h and N_KV d_h rows, as transformers' Phi3Attention slices it."""
    hf = tiny_phi3(num_key_value_heads=kv_heads)
    loaded = from_tensors(hf.config.to_dict(), hf.state_dict(), name=f"tiny-phi3-kv{kv_heads}")
    assert loaded.config.n_kv_heads == hf.config.num_key_value_heads < hf.config.num_attention_heads
    ids = torch.randint(0, BASE["vocab_size"], (T,), generator=torch.Generator().manual_seed(1))
    with torch.inference_mode():
        reference = hf(ids[None]).logits[0]
        logits = loaded.model.logits(loaded.model(ids, np.arange(T), None, StepCapture(loaded.config.n_layers)))
    assert ((logits - reference).abs().max() / reference.abs().max()).item() < 1e-4


def test_a_phi3_whose_qkv_does_not_fit_its_heads_is_refused_in_one_sentence():
    hf = tiny_phi3(num_key_value_heads=2)
    state = hf.state_dict()
    state["model.layers.0.self_attn.qkv_proj.weight"] = state["model.layers.0.self_attn.qkv_proj.weight"][:-8]
    with pytest.raises(ModelLoadError, match="shape"):
        from_tensors(hf.config.to_dict(), state, name="tiny-phi3-cut")


def test_a_phi3_converted_to_gqa_is_saved_as_transformers_reads_it(tmp_path):
    """The KV lab's GQA copy of a Phi-3 joins into one qkv_proj again; transformers gives its logits."""
    import explorer
    from explorer.core.convert import convert
    from tests.api.test_save_hf import PROMPT, hf_logits, relative_error

    hf = tiny_phi3()
    original = explorer.Model(from_tensors(hf.config.to_dict(), hf.state_dict(), name="tiny-phi3"))
    converted = explorer.Model(convert(original.loaded, "gqa-2").loaded)
    assert converted.loaded.config.n_kv_heads == 2
    run = converted.run(PROMPT)
    converted.save_hf(tmp_path / "gqa")
    assert relative_error(run.logits, hf_logits(tmp_path / "gqa", run.ids)) < 1e-4
