"""Counts as a person reads them: "1 token", "2 tokens", "1,024 tokens", and a step's name."""
from __future__ import annotations


def plural(n: int, noun: str, many: str | None = None) -> str:
    """`n` and `noun`, the noun made plural unless n is 1 (`many` where adding an s is wrong)."""
    n = int(n)
    return f"{n:,} " + (noun if n == 1 else many or noun + "s")


def step_name(step: int) -> str:
    """How every view counts steps: step 0 is the prefill, step n the n-th decoded token (the status
    bar, the KV cache and the mask all say the same number; `export --at-step` counts so too)."""
    return "step 0 (prefill)" if step == 0 else f"step {step}"
