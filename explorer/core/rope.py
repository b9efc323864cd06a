"""Rotary position embeddings (Su et al., RoFormer, 2021).

Each pair of dimensions (x_{2i}, x_{2i+1}) -- or (x_i, x_{i+d/2}) in the
"rotate half" layout most checkpoints use -- is rotated by the angle
position * inv_freq_i, so that q_m . k_n depends on m - n only.
The inverse frequencies come from a table of schemes: default, linear,
llama3 (Llama 3.1) and YaRN (DeepSeek).
"""
from __future__ import annotations

import math

import torch

from explorer.core.config import RopeSpec


def _default(spec: RopeSpec, dim: int) -> tuple[torch.Tensor, float]:
    exponents = torch.arange(0, dim, 2, dtype=torch.int64, device="cpu").float() / dim
    return 1.0 / (spec.theta ** exponents), 1.0


def _linear(spec: RopeSpec, dim: int) -> tuple[torch.Tensor, float]:
    inv_freq, _ = _default(spec, dim)
    return inv_freq / spec.factor, 1.0


def _llama3(spec: RopeSpec, dim: int) -> tuple[torch.Tensor, float]:
    """Llama 3.1: keep high frequencies, divide low ones by `factor`, blend in between."""
    inv_freq, _ = _default(spec, dim)
    old_context = spec.original_max_positions
    low_wavelen = old_context / spec.low_freq_factor
    high_wavelen = old_context / spec.high_freq_factor
    wavelen = 2 * math.pi / inv_freq
    scaled = torch.where(wavelen > low_wavelen, inv_freq / spec.factor, inv_freq)
    smooth = (old_context / wavelen - spec.low_freq_factor) / (spec.high_freq_factor - spec.low_freq_factor)
    smoothed = (1 - smooth) * scaled / spec.factor + smooth * scaled
    is_medium = ~(wavelen < high_wavelen) * ~(wavelen > low_wavelen)
    return torch.where(is_medium, smoothed, scaled), 1.0


def _yarn_mscale(scale: float, mscale: float = 1.0) -> float:
    return 1.0 if scale <= 1 else 0.1 * mscale * math.log(scale) + 1.0


def _yarn(spec: RopeSpec, dim: int) -> tuple[torch.Tensor, float]:
    """YaRN (Peng et al., 2023): interpolate low frequencies, extrapolate high ones."""
    factor = spec.factor
    attention_factor = spec.attention_factor
    if attention_factor is None:
        if spec.mscale and spec.mscale_all_dim:
            attention_factor = _yarn_mscale(factor, spec.mscale) / _yarn_mscale(factor, spec.mscale_all_dim)
        else:
            attention_factor = _yarn_mscale(factor)

    def correction_dim(rotations: float) -> float:
        return dim * math.log(spec.original_max_positions / (rotations * 2 * math.pi)) / (2 * math.log(spec.theta))

    low, high = correction_dim(spec.beta_fast), correction_dim(spec.beta_slow)
    if spec.truncate:
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, dim - 1)
    if low == high:
        high += 0.001
    ramp = torch.clamp((torch.arange(dim // 2, dtype=torch.float32, device="cpu") - low) / (high - low), 0, 1)
    pos_freqs = spec.theta ** (torch.arange(0, dim, 2, device="cpu").float() / dim)
    extrapolation = 1.0 - ramp
    inv_freq = (1.0 / (factor * pos_freqs)) * (1 - extrapolation) + (1.0 / pos_freqs) * extrapolation
    return inv_freq, float(attention_factor)


INV_FREQ_SCHEMES = {"default": _default, "linear": _linear, "llama3": _llama3, "yarn": _yarn}


class Rotary:
    """cos/sin tables for one RoPE spec, grown on demand per device (not a module: nothing to load)."""

    def __init__(self, spec: RopeSpec, d_head: int, interleave: bool = False):
        dim = int(d_head * spec.partial_rotary_factor)
        self.inv_freq, self.attention_factor = INV_FREQ_SCHEMES[spec.kind](spec, dim)  # (dim/2,)
        self.interleave = interleave
        self._tables: dict[tuple, tuple[torch.Tensor, torch.Tensor]] = {}

    def cos_sin(self, positions: torch.Tensor, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
        """cos and sin of position * inv_freq, each (T, dim) in the rotate-half layout [f, f].

        For the rotate-half layout the sin returned is the signed one that `apply` expects.
        """
        needed = int(positions.max()) + 1
        key = (positions.device, dtype)
        table = self._tables.get(key)
        if table is None or table[0].shape[0] < needed:
            length = max(needed, 2 * (table[0].shape[0] if table else 256))
            steps = torch.arange(length, dtype=torch.float32, device="cpu")
            freqs = steps[:, None] * self.inv_freq[None, :]                   # (L, dim/2)
            angles = torch.cat((freqs, freqs), dim=-1)                        # (L, dim)
            cos = (angles.cos() * self.attention_factor).to(positions.device, dtype)
            sin = (angles.sin() * self.attention_factor).to(positions.device, dtype)
            half = sin.shape[-1] // 2
            signed_sin = torch.cat((-sin[:, :half], sin[:, half:]), dim=-1)    # rotate_half's signs, folded in
            table = (cos, sin, signed_sin)
            self._tables[key] = table
        if self.interleave:
            return table[0][positions], table[1][positions]
        return table[0][positions], table[2][positions]

    def apply(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        """Rotate x (..., T, dim) by the angles of its positions: x cos + rotate_half(x) sin.

        In the rotate-half layout `sin` carries rotate_half's signs ([-sin, sin]), so
        rotate_half(x) * sin becomes roll(x, d/2) * signed_sin: one op instead of four.
        """
        if self.interleave:
            return rotate_pairs(x, cos, sin)
        return x * cos + torch.roll(x, x.shape[-1] // 2, dims=-1) * sin


def rotate_pairs(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Interleaved layout (DeepSeek): rotate each adjacent pair (x_{2i}, x_{2i+1}) in place."""
    half = cos.shape[-1] // 2
    cos, sin = cos[..., :half], sin[..., :half]                               # (T, dim/2)
    even, odd = x[..., 0::2], x[..., 1::2]                                    # (..., T, dim/2)
    rotated = torch.stack((even * cos - odd * sin, odd * cos + even * sin), dim=-1)
    return rotated.flatten(-2)                                                # (..., T, dim)
