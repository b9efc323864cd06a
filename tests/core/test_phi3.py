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


def test_a_phi3_with_fewer_kv_heads_is_refused_in_one_sentence():
    hf = tiny_phi3(num_key_value_heads=2)
    with pytest.raises(ModelLoadError, match="shape"):
        from_tensors(hf.config.to_dict(), hf.state_dict(), name="tiny-phi3-gqa")
