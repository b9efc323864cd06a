"""Choosing the next token: greedy, temperature, top-k, top-p (Holtzman et al. 2019), seeded.

The random draw at position p depends only on (seed, p), so stepping back and
forward again, or replaying a session, picks the same token.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from explorer.core.errors import ExplorerError


@dataclass(frozen=True)
class Sampling:
    """temperature 0 means greedy; top_k 0 and top_p 1.0 mean no truncation."""

    temperature: float = 0.0
    top_k: int = 0
    top_p: float = 1.0
    seed: int = 0

    def __post_init__(self):
        if self.temperature < 0 or self.top_k < 0 or not 0.0 < self.top_p <= 1.0:
            raise ExplorerError(
                f"sampling values temperature={self.temperature}, top_k={self.top_k}, top_p={self.top_p} "
                "are out of range (temperature >= 0, top_k >= 0, 0 < top_p <= 1)")

    @property
    def greedy(self) -> bool:
        return self.temperature == 0.0


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
