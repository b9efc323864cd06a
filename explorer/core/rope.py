"""Rotary position embeddings (Su et al., RoFormer, 2021).

Each pair of dimensions (x_{2i}, x_{2i+1}) -- or (x_i, x_{i+d/2}) in the
"rotate half" layout most checkpoints use -- is rotated by the angle
position * inv_freq_i, so that q_m . k_n depends on m - n only.
The inverse frequencies come from a table of schemes: default, linear,
llama3 (Llama 3.1) and YaRN (DeepSeek).
"""
from __future__ import annotations

import math
from typing import NamedTuple

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

    def table(self, positions: torch.Tensor, dtype: torch.dtype) -> "RotationTable":
        """What `rotate` needs for these positions: the rotation matrices R_p for a few positions
        (a decoding step), or cos and sin for many (a prefill, where (T, d, d) would be large)."""
        cos, sin = self.cos_sin(positions, dtype)
        if positions.shape[0] > self.MATRICES_UP_TO:
            return RotationTable(cos, sin, None)
        return RotationTable(cos, sin, self._matrices(cos, sin))

    MATRICES_UP_TO = 64

    def _matrices(self, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        """R_p (T, d, d) with x R_p = x rotated by position p's angles (x a row vector).

        R_p is block-diagonal in 2x2 rotations [[cos, sin], [-sin, cos]] of each pair, the
        matrix form in RoFormer; one small matmul applies it to every head at once.
        """
        t, d = cos.shape
        matrices = torch.zeros(t, d, d, dtype=cos.dtype, device=cos.device)
        index = torch.arange(d, device=cos.device)
        if self.interleave:                     # pairs (2i, 2i+1), angle i; cos, sin are [f, f]
            half = d // 2
            even, odd = index[0::2], index[1::2]
            matrices[:, even, even] = cos[:, :half]
            matrices[:, odd, odd] = cos[:, :half]
            matrices[:, odd, even] = -sin[:, :half]     # y_2i = x_2i cos - x_2i+1 sin
            matrices[:, even, odd] = sin[:, :half]      # y_2i+1 = x_2i+1 cos + x_2i sin
        else:                                   # pairs (i, i + d/2); sin is signed [-sin, sin]
            matrices[:, index, index] = cos
            matrices[:, (index + d // 2) % d, index] = sin   # y_j += x_{j+d/2} * signed sin_j
        return matrices

    def rotate(self, x: torch.Tensor, table: "RotationTable") -> torch.Tensor:
        """x (T, n, d): n vectors per position (heads), each rotated by its position's angles."""
        if table.matrices is not None:
            return torch.bmm(x, table.matrices)                                # (T, n, d) @ (T, d, d)
        cos, sin = table.cos[:, None, :], table.sin[:, None, :]                # (T, 1, d)
        if self.interleave:
            return rotate_pairs(x, cos, sin)
        # In the rotate-half layout `sin` carries rotate_half's signs ([-sin, sin]), so
        # rotate_half(x) * sin is roll(x, d/2) * signed_sin: one op instead of four.
        return x * cos + torch.roll(x, x.shape[-1] // 2, dims=-1) * sin


class RotationTable(NamedTuple):
    """One step's RoPE angles for one table: cos, sin (T, d), and R_p (T, d, d) or None."""

    cos: torch.Tensor
    sin: torch.Tensor
    matrices: torch.Tensor | None


def rotate_pairs(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Interleaved layout (DeepSeek): rotate each adjacent pair (x_{2i}, x_{2i+1}) in place."""
    half = cos.shape[-1] // 2
    cos, sin = cos[..., :half], sin[..., :half]                               # (T, 1, dim/2)
    even, odd = x[..., 0::2], x[..., 1::2]                                    # (T, n, dim/2)
    rotated = torch.stack((even * cos - odd * sin, odd * cos + even * sin), dim=-1)
    return rotated.flatten(-2)                                                # (T, n, dim)
