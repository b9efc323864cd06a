"""The attention kernel f_kappa, written once (explorer/core/kernel.py), against its formula written here.

    S <- c tanh(S / c) (exp only);  A_ij = f(S_ij) / Z_i over the keys row i sees, 0 where masked, 0 where Z_i = 0
    exp: exp(S_ij / tau) (shift-free: the shift cancels);  linear: S_ij;  relu: max(0, S_ij)

Each kernel is checked in float32 torch (the engine) and float64 numpy (the derivation), and through
each caller: attention.kernel_weights (engine), attention_maps.normalised (on-demand maps) and
derivation.f_row (the derivation's row).
"""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from explorer.core import attention_maps, derivation, kernel
from explorer.core.attention import attention_weights, kernel_weights
from explorer.core.intervention import SOFTMAX, Kernel
from explorer.core.visibility import Visibility

KERNELS = [(SOFTMAX, None), (SOFTMAX, 2.5), (Kernel("exp", temperature=0.5), 2.5),
           (Kernel("exp", temperature=3.0), None), (Kernel("linear"), None), (Kernel("relu"), None)]


def expected(scores: np.ndarray, visible: np.ndarray, name: str, tau: float, softcap: float | None) -> np.ndarray:
    """A row by row, entry by entry, in Python floats: the formula, not the implementation."""
    out = np.zeros(scores.shape)
    for i in range(scores.shape[0]):
        f = {}
        for j in range(scores.shape[1]):
            if not visible[i, j]:
                continue
            s = float(scores[i, j])
            if name == "exp":
                s = softcap * math.tanh(s / softcap) if softcap else s
                f[j] = math.exp(s / tau)
            else:
                f[j] = s if name == "linear" else max(0.0, s)
        z = math.fsum(f.values())
        for j, value in f.items():
            out[i, j] = value / z if z != 0 else 0.0
    return out


def cases():
    """Scores (6, 9) and a mask with a causal part, a hidden key, a row that sees nothing and a row whose
    relu terms are all 0 (Z = 0). Linear's scores are kept positive, so that Z does not cancel."""
    rng = np.random.default_rng(7)
    scores = rng.normal(size=(6, 9)) * 3.0
    visible = np.tril(np.ones((6, 9), dtype=bool), k=3)
    visible[1, 2] = False
    visible[4] = False                                      # sees nothing
    scores[5, :] = -np.abs(scores[5, :]) - 0.5              # relu: every term 0
    return scores, visible


@pytest.mark.parametrize("kern, softcap", KERNELS)
def test_float64_numpy_against_the_formula(kern, softcap):
    scores, visible = cases()
    s = np.abs(scores) + 0.1 if kern.name == "linear" else scores
    want = expected(s, visible, kern.name, kern.temperature, softcap)
    got = kernel.weights(s.copy(), ~visible, kern, softcap)
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-15)
    assert np.all(got[~visible] == 0.0) and np.all(got[4] == 0.0)


@pytest.mark.parametrize("kern, softcap", KERNELS)
def test_float32_torch_against_the_formula(kern, softcap):
    scores, visible = cases()
    s = np.abs(scores) + 0.1 if kern.name == "linear" else scores
    want = expected(s.astype(np.float32).astype(np.float64), visible, kern.name, kern.temperature, softcap)
    seen = Visibility.of(visible, np.arange(6), np.arange(9), "cpu")
    tensor = torch.from_numpy(s.astype(np.float32))[None]                       # (1 head, 6, 9)
    got = kernel_weights(tensor.clone(), seen, softcap, kern)[0]
    assert got.dtype == torch.float32
    np.testing.assert_allclose(got.numpy(), want, rtol=2e-6, atol=1e-7)
    assert torch.all(got[torch.from_numpy(~visible)] == 0.0)
    if kern == SOFTMAX:                                     # the model's path: the same numbers, bit for bit
        rows = visible.any(axis=1)
        plain = attention_weights(tensor.clone(), seen.hidden, softcap)[0]
        assert torch.equal(plain[torch.from_numpy(rows)], got[torch.from_numpy(rows)])


@pytest.mark.parametrize("kern, softcap", KERNELS)
def test_on_demand_maps_float32_against_the_formula(kern, softcap):
    scores, visible = cases()
    s = (np.abs(scores) + 0.1 if kern.name == "linear" else scores).astype(np.float32)
    capped = attention_maps.scores(np.eye(6, dtype=np.float32), s.T.copy(), 1.0,      # Q K^T = S exactly
                                   kernel.kernel_softcap(softcap, kern))
    got = attention_maps.normalised(capped, visible, kern)
    want = expected(s.astype(np.float64), visible, kern.name, kern.temperature, softcap)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-7)


@pytest.mark.parametrize("kern, softcap", KERNELS)
def test_derivation_row_float64_against_the_formula(kern, softcap):
    scores, visible = cases()
    s = np.abs(scores) + 0.1 if kern.name == "linear" else scores
    for i in range(scores.shape[0]):
        q, keys = np.array([1.0]), s[i][:, None]                                   # <q, k_j> = S_ij
        row = derivation.row_scores(q, keys, 1.0, kernel.kernel_softcap(softcap, kern), visible[i])
        f, shift = derivation.f_row(row, visible[i], kern)
        z = f.sum()
        got = f / z if z != 0 else np.zeros_like(f)
        want = expected(s[i:i + 1], visible[i:i + 1], kern.name, kern.temperature, softcap)[0]
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-15)
        assert (shift is None) == (kern.name != "exp")
        assert np.array_equal(np.isneginf(row), ~visible[i])                      # S_i shown whole, -inf masked


def test_a_tensor_is_computed_by_torch_and_an_array_by_numpy():
    assert kernel.array_namespace(np.zeros(2)) is np and kernel.array_namespace(torch.zeros(2)) is torch
    capped = kernel.softcapped(np.array([100.0], dtype=np.float32), 30.0)
    assert capped.dtype == np.float32 and capped[0] == pytest.approx(30.0 * math.tanh(100.0 / 30.0), rel=1e-6)
