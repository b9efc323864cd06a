"""Tick labels of token axes, made once per token text: at 8,000 tokens a view draws 8,000 labels per axis
at every step, and all but the newest are the labels it drew before."""
from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

from explorer.views.maps import short_label

_KEPT = 1 << 17              # labels remembered: a long document's tokens, numbered and plain


@lru_cache(maxsize=_KEPT)
def tick_label(text: str) -> str:
    """short_label(text), remembered."""
    return short_label(text)


@lru_cache(maxsize=_KEPT)
def numbered_label(position: int, text: str) -> str:
    """'12 ·the': the position and the token, remembered."""
    return f"{position} {short_label(text)}"


def tick_labels(texts: Sequence[str], numbered: bool = False) -> list[str]:
    """One label per token: short_label(t), or 'i short_label(t)' where `numbered`."""
    if numbered:
        return [numbered_label(i, t) for i, t in enumerate(texts)]
    return [tick_label(t) for t in texts]
