"""A soft-capped model under a replaced kernel: the maps rebuilt on demand follow the engine, whose kernel
replaces the softmax and its cap (A = Z^-1 f(S) on the uncapped S); under exp the cap stays (c tanh(S / c))."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from explorer.core import attention_maps
from explorer.core.decode import Decoder
from explorer.core.intervention import Intervention, Kernel, KernelChoice
from explorer.core.runtime import from_tensors
from tests.core import conftest

IDS = np.random.default_rng(5).integers(0, 96, size=24)


@pytest.fixture(scope="module")
def softcapped():
    """Gemma 3's tiny test family with its attention scores soft-capped at c = 1.5, as Gemma 2 caps them
    (transformers' Gemma 3 applies no attention cap, nor does its reader: the cap is set on the built model)."""
    hf_model = conftest.make_hf_model("gemma3")
    loaded = from_tensors(hf_model.config.to_dict(), hf_model.state_dict())
    for block in loaded.model.layers:
        block.attn.softcap = 1.5
    loaded.config = replace(loaded.config, attn_softcap=1.5)
    return loaded


def _formula(q, k, scale, mask, kernel):
    """A written out: S = Q K^T scale, capped only under exp, then f over the visible keys and Z."""
    s = (q.astype(np.float64) @ k.astype(np.float64).T) * scale
    if kernel.name == "exp":
        s = 1.5 * np.tanh(s / 1.5) / kernel.temperature
        f = np.where(mask, np.exp(s - np.where(mask, s, -np.inf).max(-1, keepdims=True)), 0.0)
    else:
        f = np.where(mask, s if kernel.name == "linear" else np.maximum(s, 0.0), 0.0)
    z = f.sum(-1, keepdims=True)
    return np.divide(f, z, out=np.zeros_like(f), where=z != 0)


@pytest.mark.parametrize("kernel", [Kernel("relu"), Kernel("linear"), Kernel("exp", 2.0), Kernel("exp", 1.0)])
def test_rebuilt_maps_equal_the_engines_and_the_formula(softcapped, kernel):
    trace = Decoder(softcapped, intervention=Intervention(kernels=(KernelChoice(kernel),))).prefill(IDS)
    record = trace.steps[0].layers[1].attn                           # the full-attention layer
    assert record.softcap == 1.5
    for head in range(record.n_heads):
        q, k = record.q[head], record.k[record.kv_head_of(head)]
        rebuilt = attention_maps.weights(q, k, record.mask, record.scale, record.softcap, record.kernel)
        stored = record.weights_of(head)                                 # what the torch engine used
        tolerance = dict(rtol=1e-4, atol=1e-4) if kernel.name == "linear" else dict(rtol=0, atol=1e-5)
        np.testing.assert_allclose(rebuilt, stored, **tolerance)      # linear's Z is signed and may nearly cancel
        expected = _formula(q, k, record.scale, np.asarray(record.mask), kernel)
        np.testing.assert_allclose(rebuilt, expected, **tolerance)
