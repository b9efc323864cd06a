"""The decoding choices (greedy, temperature, top-k, top-p, seed) as one value, shared by the engine and the app.

Torch-free, so the toolbar, the settings and the session file hold the very dataclass the
decoder samples with (explorer/core/sampling.py draws the token).
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

from explorer.core.errors import ExplorerError
from explorer.core.units import MAX_COUNT


class SamplingError(ExplorerError, ValueError):
    """Sampling values out of range (a ValueError too, as a bad number in a settings file is)."""


MAX_SEED = 2**63 - 1            # torch.Generator.manual_seed takes a signed 64-bit seed

# field -> (whole number?, low, high, low itself allowed?, what it must be). Transformers refuses a NaN,
# zero or negative temperature; here 0 means greedy, and a NaN or infinite one is refused like theirs.
RULES = {
    "temperature": (False, 0.0, math.inf, True, "a finite number, 0 or more (0 is greedy)"),
    # at most MAX_COUNT, past any vocabulary: a session's top_k of 10^30 stopped the toolbar's spin box with an
    # OverflowError when it was opened (boundary27)
    "top_k": (True, 0, MAX_COUNT, True, f"a whole number from 0 to {MAX_COUNT} (0 keeps every token)"),
    "top_p": (False, 0.0, 1.0, False, "a number above 0 and at most 1 (1 keeps every token)"),
    "seed": (True, 0, MAX_SEED, True, f"a whole number from 0 to {MAX_SEED}"),
}


def checked(field: str, value) -> int | float:
    """`value` as the number `field` holds (a plain int or float), or SamplingError naming it: the one
    rule for the API, the CLI, the toolbar, the settings and session files."""
    whole, low, high, low_allowed, wanted = RULES[field]
    legal = isinstance(value, numbers.Integral) if whole else isinstance(value, numbers.Real)
    if legal and not isinstance(value, bool):
        number = int(value) if whole else float(value)
        if math.isfinite(number) and (low < number or low_allowed and number == low) and number <= high:
            return number
    shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:40] + "…"
    raise SamplingError(f"sampling {field}={shown} is not legal: it must be {wanted}.")


@dataclass(frozen=True)
class Sampling:
    """temperature 0 means greedy; top_k 0 and top_p 1.0 mean no truncation."""

    temperature: float = 0.0
    top_k: int = 0
    top_p: float = 1.0
    seed: int = 0

    def __post_init__(self):
        for field in RULES:             # numpy scalars become plain numbers, so the value writes as JSON
            object.__setattr__(self, field, checked(field, getattr(self, field)))

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
