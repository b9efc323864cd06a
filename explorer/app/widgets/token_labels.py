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


def tick_labels(texts: Sequence[str], numbered: bool = False, start: int = 0) -> list[str]:
    """One label per token: short_label(t), or 'i short_label(t)' where `numbered` (the first token at
    position `start`)."""
    if numbered:
        return [numbered_label(i, t) for i, t in enumerate(texts, start)]
    return [tick_label(t) for t in texts]


class GrowingLabels:
    """tick_labels of a text that grows at its end, as decoding steps make it: the labels of the tokens it
    had before are kept, and only the new tokens' are made (looking 8,000 labels up again took a few
    milliseconds of every step)."""

    def __init__(self) -> None:
        self._texts: tuple[str, ...] = ()
        self._numbered = False
        self._labels: list[str] = []

    def __call__(self, texts: Sequence[str], numbered: bool = False) -> list[str]:
        texts, old = tuple(texts), len(self._texts)
        if numbered != self._numbered or not (old <= len(texts) and texts[:old] == self._texts):
            old, self._labels, self._numbered = 0, [], numbered
        if old == len(texts):
            return self._labels
        # A new list: the one returned before may be held (an axis compares the next labels with it).
        self._labels = self._labels + tick_labels(texts[old:], numbered, start=old)
        self._texts = texts
        return self._labels
