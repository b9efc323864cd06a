"""Choosing the next token: greedy, temperature, top-k, top-p (Holtzman et al. 2019), seeded.

The random draw at position p depends only on (seed, p), so stepping back and
forward again, or replaying a session, picks the same token.
"""
from __future__ import annotations

import numpy as np
import torch

from explorer.core.sampling_settings import Sampling

__all__ = ["Sampling", "choose", "distribution"]


def distribution(logits: torch.Tensor, sampling: Sampling) -> np.ndarray:
    """p(next token) after temperature, top-k and top-p: (V,) float64 summing to 1."""
    scaled = logits.double().cpu() / max(sampling.temperature, 1e-8)
    probs = torch.softmax(scaled, dim=-1)
    order = torch.argsort(probs, descending=True)
    keep = torch.zeros_like(probs, dtype=torch.bool)
    ranked = probs[order]
    n_keep = len(ranked) if sampling.top_k == 0 else min(sampling.top_k, len(ranked))
    if sampling.top_p < 1.0:
        # the smallest prefix whose mass reaches top_p (the token that crosses it is kept)
        before = torch.cumsum(ranked, dim=0) - ranked
        n_keep = min(n_keep, max(1, int((before < sampling.top_p).sum())))
    keep[order[:n_keep]] = True
    kept = torch.where(keep, probs, torch.zeros_like(probs))
    return (kept / kept.sum()).numpy()


def choose(logits: torch.Tensor, sampling: Sampling, position: int) -> int:
    """The next token id from the logits (V,) of the token at `position - 1`."""
    if sampling.greedy:
        return int(torch.argmax(logits))
    probs = distribution(logits, sampling)
    rng = np.random.default_rng([int(sampling.seed), int(position)])
    return int(rng.choice(len(probs), p=probs))
