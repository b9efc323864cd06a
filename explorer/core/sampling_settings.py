"""The decoding choices (greedy, temperature, top-k, top-p, seed) as one value, shared by the engine and the app.

Torch-free, so the toolbar, the settings and the session file hold the very dataclass the
decoder samples with (explorer/core/sampling.py draws the token).
"""
from __future__ import annotations

from dataclasses import dataclass

from explorer.core.errors import ExplorerError


class SamplingError(ExplorerError, ValueError):
    """Sampling values out of range (a ValueError too, as a bad number in a settings file is)."""


@dataclass(frozen=True)
class Sampling:
    """temperature 0 means greedy; top_k 0 and top_p 1.0 mean no truncation."""

    temperature: float = 0.0
    top_k: int = 0
    top_p: float = 1.0
    seed: int = 0

    def __post_init__(self):
        if self.temperature < 0 or self.top_k < 0 or not 0.0 < self.top_p <= 1.0:
            raise SamplingError(
                f"sampling values temperature={self.temperature}, top_k={self.top_k}, top_p={self.top_p} "
                "are out of range (temperature >= 0, top_k >= 0, 0 < top_p <= 1)")

    @property
    def greedy(self) -> bool:
        return self.temperature == 0.0

    def as_dict(self) -> dict:
        return {"temperature": self.temperature, "top_k": self.top_k, "top_p": self.top_p, "seed": self.seed}

    @classmethod
    def from_dict(cls, d: dict) -> "Sampling":
        """From a session file or the settings; keys left out take the defaults."""
        return cls(temperature=float(d.get("temperature", 0.0)), top_k=int(d.get("top_k", 0)),
                   top_p=float(d.get("top_p", 1.0)), seed=int(d.get("seed", 0)))
