"""Sizes as people read them: byte counts in binary units (KiB, MiB, GiB), parameter counts in k/M/B.

Standard library only, so the app, the command line and the numpy-only modules share one formatter.
"""
from __future__ import annotations

MAX_COUNT = 2**31 - 1          # steps, tokens, positions a flag or a call may ask for: far beyond any context


def human_bytes(n: float) -> str:
    """1536 -> '1.50 KiB'; binary units, because memory and files are counted in powers of two."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.2f} {unit}"
        n /= 1024
    return f"{n:.2f} TiB"


def human_count(n: int) -> str:
    """134_515_008 -> '135M': three significant digits, for parameter counts."""
    for unit, size in (("B", 1e9), ("M", 1e6), ("k", 1e3)):
        if n >= size:
            return f"{n / size:.3g}{unit}"
    return str(n)
