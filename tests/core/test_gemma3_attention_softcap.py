"""transformers' Gemma 3 keeps attn_logit_softcapping in its config, but its attention never applies it
(Gemma 2's passes it on as softcap; Gemma 3's does not): a Gemma 3 config with the key set is the uncapped
model. The explorer reads such a config as transformers runs it. Reference: transformers' Gemma3ForCausalLM,
with the key and without it, on the same weights."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from explorer.core.decode import Decoder
from explorer.core.runtime import from_tensors
from tests.core import conftest

IDS = np.random.default_rng(7).integers(0, 96, size=20)


def _gemma3(**extra):
    config_name, model_name, kwargs = conftest.FAMILIES["gemma3"]
    name = "gemma3_with_key"
    conftest.FAMILIES[name] = (config_name, model_name, dict(kwargs, **extra))
    try:
        return conftest.make_hf_model(name)
    finally:
        del conftest.FAMILIES[name]


@pytest.mark.parametrize("cap", [0.5, 3.0])
def test_a_gemma3_config_with_an_attention_cap_runs_as_transformers_runs_it(cap):
    hf_model = _gemma3(attn_logit_softcapping=cap)
    assert hf_model.config.attn_logit_softcapping == cap
    with torch.no_grad():
        expected = hf_model(torch.as_tensor(IDS)[None], output_attentions=True)
        uncapped = _gemma3()(torch.as_tensor(IDS)[None]).logits[0]
    torch.testing.assert_close(expected.logits[0], uncapped, rtol=0, atol=0)     # transformers ignores the key
    loaded = from_tensors(hf_model.config.to_dict(), hf_model.state_dict())
    assert loaded.config.attn_softcap is None
    with torch.no_grad():
        logits = loaded.model.logits(loaded.model(torch.as_tensor(IDS), np.arange(len(IDS))))
    assert ((logits - expected.logits[0]).abs().max() / expected.logits[0].abs().max()).item() < 1e-4
    trace = Decoder(loaded).prefill(IDS)
    for layer, reference in enumerate(expected.attentions):
        assert trace.steps[0].layers[layer].attn.softcap is None
        np.testing.assert_allclose(trace.attention(layer), reference[0].numpy(), atol=1e-5, rtol=0)
