"""Gemma's final soft-cap, logits <- c tanh(z / c), is written once (kernel.softcapped): the model's logits and
the attribution's capped logit both go through it, bit for bit the formula, and the capped logits still
equal transformers' (Gemma-2-style final_logit_softcapping on the tiny Gemma 3 family)."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from explorer.core import attribution
from explorer.core import kernel as kernels
from explorer.core.decode import Decoder
from explorer.core.runtime import from_tensors
from tests.core.conftest import FAMILIES, make_hf_model

CAP = 2.0
IDS = np.random.default_rng(3).integers(0, 96, size=12)


@pytest.fixture(scope="module")
def capped():
    """tests/core/conftest.py's tiny Gemma 3 with its logits soft-capped at c = 2 (transformers' own config key)."""
    config_name, model_name, kwargs = FAMILIES["gemma3"]
    FAMILIES["final_capped"] = (config_name, model_name, dict(kwargs, final_logit_softcapping=CAP))
    try:
        hf_model = make_hf_model("final_capped")
    finally:
        del FAMILIES["final_capped"]
    return hf_model, from_tensors(hf_model.config.to_dict(), hf_model.state_dict())


def test_the_model_and_the_attribution_cap_through_the_one_function(capped, monkeypatch):
    _, loaded = capped
    caps = []
    original = kernels.softcapped

    def spy(s, softcap):
        caps.append((type(s).__module__.partition(".")[0], softcap))
        return original(s, softcap)

    monkeypatch.setattr(kernels, "softcapped", spy)
    with torch.inference_mode():
        loaded.model.logits(torch.zeros(1, loaded.config.d_model))
    assert caps == [("torch", CAP)]
    caps.clear()
    attribution.attribute(loaded, IDS)
    assert ("builtins", CAP) in caps                                     # the capped logit z, a float


def test_the_logits_are_the_formula_bit_for_bit(capped):
    _, loaded = capped
    hidden = torch.randn(5, loaded.config.d_model, generator=torch.Generator().manual_seed(0))
    with torch.inference_mode():
        z = hidden @ loaded.model.lm_head.weight.T                               # (5, V) pre-cap
        got = loaded.model.logits(hidden)
    assert got.dtype == torch.float32 and z.abs().max() > CAP                    # the cap bites
    assert torch.equal(got, CAP * torch.tanh(z / CAP))


@pytest.mark.parametrize("z", [0.0, 1.25, -7.5, 123.456, np.float32(3.7)])
def test_a_single_logit_is_the_formula_bit_for_bit(z):
    assert kernels.softcapped(z, CAP) == CAP * np.tanh(z / CAP)
    assert kernels.softcapped(z, None) == z


def test_float32_arrays_stay_float32_and_equal_the_formula():
    s = np.linspace(-20, 20, 101, dtype=np.float32)
    c = np.float32(CAP)
    got = kernels.softcapped(s.copy(), CAP)
    assert got.dtype == np.float32 and np.array_equal(got, c * np.tanh(s / c))


def test_the_capped_logits_equal_transformers(capped):
    hf_model, loaded = capped
    decoder = Decoder(loaded)
    decoder.prefill(IDS)
    with torch.inference_mode():
        expected = hf_model(torch.as_tensor(IDS)[None]).logits[0].numpy()    # (T, V), capped by transformers
    assert np.abs(expected).max() > 0.5 * CAP                                    # near the cap: tanh is not linear here
    for position in (0, 5, len(IDS) - 1):
        np.testing.assert_allclose(decoder.logits_at(position), expected[position], atol=1e-5, rtol=0)
    attributed = attribution.attribute(loaded, IDS)
    assert attributed.capped_logit == pytest.approx(float(expected[-1, attributed.token_id]), abs=1e-5)
