"""The attention kernel f_kappa and its normaliser Z, written once for torch tensors and numpy arrays.

    S <- c tanh(S / c)                                soft-capping by c, where the model has it (exp only)
    A_ij = f_kappa(S_ij) / Z_i,   Z_i = sum_j f_kappa(S_ij) over the keys i sees (masked: f = 0; Z_i = 0: A_i = 0)
        exp:    f = exp(S_ij / tau - m_i),  m_i = max_j S_ij / tau   (the model's softmax at tau = 1)
        linear: f = S_ij
        relu:   f = max(0, S_ij)

The engine forms A with it in the model's dtype (torch tensors), the on-demand maps in float32 and
the derivation in float64 (numpy arrays): the same operations in the same order, so the maps and
the derivation recompute what the model computed. Each function works in its array's own library
(`array_namespace`). The one difference is the softmax under the model's own kernel: torch's fused
softmax, which the model runs (and transformers with it), against its steps written out for numpy.
This module imports no torch, so the numpy-only trace and views can use it.
"""
from __future__ import annotations

import sys

import numpy as np

from explorer.core.intervention import SOFTMAX, Kernel


def array_namespace(x):
    """numpy for a numpy array or number; for a tensor the library its type comes from (torch, loaded
    already since a tensor exists: looked up, not imported, so that numpy callers never load it)."""
    if isinstance(x, (np.ndarray, np.generic, float, int)):
        return np
    return sys.modules[type(x).__module__.partition(".")[0]]


def softcapped(s, softcap: float | None):
    """c tanh(S / c) where the model soft-caps its scores by c, else S (Gemma 2)."""
    if not softcap:
        return s
    if isinstance(s, np.ndarray):
        softcap = s.dtype.type(softcap)              # c in the scores' own precision (float32 stays float32)
    return array_namespace(s).tanh(s / softcap) * softcap


def kernel_softcap(softcap: float | None, kernel: Kernel | None) -> float | None:
    """The soft-cap that the scores entering f_kappa carry: the model's own under its softmax (exp, at any
    temperature); none where an experiment replaced the kernel, which replaces the softmax and its cap."""
    return softcap if kernel is None or kernel.name == "exp" else None


def weights(s, hidden, kernel: Kernel | None = None, softcap: float | None = None):
    """A = Z^-1 f_kappa(S) over the visible entries, S soft-capped first under exp.

    s: (..., n_kv) scores, a fresh array of the caller's (overwritten); hidden: True where masked,
    broadcast over s, or None. Masked entries come out exactly 0. Under exp a torch row that sees
    nothing is 0/0 (NaN), as the model's softmax gives it; the caller that may hide whole rows zeroes them.
    """
    kernel = kernel or SOFTMAX
    if kernel.name == "exp":
        return softmax(tempered(softcapped(s, softcap), kernel), hidden)
    return normalise(terms(s, hidden, kernel)[0])


def tempered(s, kernel: Kernel):
    """S / tau: exp(S / tau) is the softmax at temperature tau (tau = 1: S itself)."""
    return s / kernel.temperature if kernel.temperature != 1.0 else s


def softmax(s, hidden):
    """softmax(S) over the visible entries (hidden: -inf first), along the last axis.

    torch: the fused softmax in float32 (the model's own op), cast back to the scores' dtype;
    numpy: exp(S - m) / Z written out (`terms`, `normalise`), where a row that sees nothing is 0.
    """
    if isinstance(s, np.ndarray):
        return normalise(terms(s, hidden, SOFTMAX)[0])
    xp = array_namespace(s)
    if hidden is not None:
        s = s.masked_fill_(hidden, float("-inf"))
    a = xp.softmax(s, dim=-1, dtype=xp.float32)
    return a if s.dtype == xp.float32 else a.to(s.dtype)


def terms(s, hidden, kernel: Kernel):
    """f_kappa(S) with the hidden entries 0, and the shift m it subtracts (exp; None for kernels that shift nothing).

    exp: exp(S / tau - m), m = max over the visible entries of S / tau (0 where none is visible: Z_i^-1
    cancels the shift); linear: S; relu: max(0, S). s: (..., n_kv), overwritten where it is a numpy array.
    """
    xp = array_namespace(s)
    if kernel.name == "exp":
        s = hide(tempered(s, kernel), hidden, float("-inf"))
        peak = xp.amax(s, axis=-1, keepdims=True)                                 # m: (..., 1)
        peak = xp.where(xp.isfinite(peak), peak, 0.0)
        if isinstance(s, np.ndarray):                                             # a block of n_kv columns: in place
            np.subtract(s, peak, out=s)
            return np.exp(s, out=s), peak
        return xp.exp(s - peak), peak
    f = s if kernel.name == "linear" else relu(s)
    return hide(f, hidden, 0.0), None


def relu(s):
    """max(0, S)."""
    return np.maximum(s, 0.0) if isinstance(s, np.ndarray) else s.relu()


def hide(s, hidden, value: float):
    """S with the hidden entries set to `value`: in place for a numpy array (the caller's fresh block),
    a new tensor for torch (autograd may still need S)."""
    if hidden is None:
        return s
    if isinstance(s, np.ndarray):
        np.copyto(s, value, where=hidden)
        return s
    return s.masked_fill(hidden, value)


def normalise(f):
    """A = f / Z with Z = sum_j f_j along the last axis; a row with Z = 0 is all 0."""
    xp = array_namespace(f)
    z = xp.sum(f, axis=-1, keepdims=True)                                         # Z: row sums
    empty = z == 0
    if isinstance(f, np.ndarray):                  # the caller's fresh block (`terms`): divided in place
        np.divide(f, np.where(empty, f.dtype.type(1), z), out=f)
        np.copyto(f, 0, where=empty)
        return f
    return xp.where(empty, 0.0, f / xp.where(empty, 1.0, z))
