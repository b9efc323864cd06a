"""A long token's tick label is cut after a whole character: never between a letter and its combining accent,
nor inside an emoji sequence (joiners, skin tones, variation selectors), which drew a bare accent or half an
emoji (issue 22, cut text). Expectation: Python's own unicodedata, independent of the label code: the kept part
ends on a character that is not a mark, and the ellipsis follows it."""
from __future__ import annotations

import unicodedata

import pytest

from explorer.views.maps import short_label

ZWJ = "\u200d"


@pytest.mark.parametrize("text", [
    "e\u0301" * 8,                                   # é as e + combining acute
    "a" * 8 + "\U0001F44D\U0001F3FD" + "b",          # 👍🏽 across the cut
    "x" * 8 + "\U0001F469" + ZWJ + "\U0001F4BB",     # 👩‍💻 across the cut
    "abcdefgh" + "\u2764\ufe0f" + "z",                # ❤️ with its variation selector
])
def test_cut_is_after_a_whole_character(text):
    label = short_label(text)
    assert label.endswith("…") and len(label) <= 10
    kept = label[:-1]
    assert text.replace(" ", "·").startswith(kept)
    after = text[len(kept)]
    assert unicodedata.combining(after) == 0 and unicodedata.category(after) not in ("Mn", "Me")
    assert after != ZWJ and not 0xFE00 <= ord(after) <= 0xFE0F and not 0x1F3FB <= ord(after) <= 0x1F3FF
    assert not kept.endswith(ZWJ)


def test_short_tokens_are_whole():
    assert short_label("Hello") == "Hello"
    assert short_label(" the") == "·the"
