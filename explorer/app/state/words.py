"""Counts as a person reads them: "1 token", "2 tokens", "1,024 tokens"."""
from __future__ import annotations


def plural(n: int, noun: str, many: str | None = None) -> str:
    """`n` and `noun`, the noun made plural unless n is 1 (`many` where adding an s is wrong)."""
    n = int(n)
    return f"{n:,} " + (noun if n == 1 else many or noun + "s")
