"""Several prompts at once: each prompt's result equals its result alone.

The prompts run one after another through the same engine (each a prefill of its own length, so no
padding can change a number), and `progress(done, total)` is called after each. Lists given beside
the prompts (targets, positions) are matched one to one, or a single value is used for every prompt.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

from explorer.core.errors import ExplorerError


def each(prompts: Sequence, compute: Callable, progress: Callable | None = None) -> list:
    """[compute(p) for p in prompts], reporting progress(done, total) after each."""
    prompts = list(prompts)
    results = []
    for done, prompt in enumerate(prompts, start=1):
        results.append(compute(prompt))
        if progress is not None:
            progress(done, len(prompts))
    return results


def matched(values, n: int, what: str) -> list:
    """`values` as a list of n: a list or tuple of n values, or one value repeated (None stays None)."""
    if isinstance(values, (list, tuple)):
        if len(values) != n:
            raise ExplorerError(f"{what} lists {len(values)} values for {n} prompts: give one per prompt, or one")
        return list(values)
    return [values] * n
