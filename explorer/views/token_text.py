"""The text cut at its tokens, each character shown exactly once.

A tokenizer's offsets give each token the characters it covers. Byte-level BPE cuts a character
of two to four UTF-8 bytes (東, 😀) into several tokens, and each of them reports the whole
character as its span: drawing every span would repeat 東 once per piece. Here the first token
that covers a character shows it; a token whose characters were all shown already (it holds only
their later bytes) shows a byte marker instead. Characters that no token covers are shown between
the tokens: spaces a pre-tokenizer set aside as plain text, anything else as dropped, because a
vocabulary without an unknown token cuts it out of what the model reads.
"""
from __future__ import annotations

import unicodedata
import warnings
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class TextPiece:
    """One run of the drawn text.

    text: the characters of the source it shows ("" for a marker); position: the token it belongs to
    (None for characters no token covers); marker: what is drawn that is not the source's text (a
    byte marker, a special token's name, a generated token); dropped: characters that no token covers.
    """

    text: str
    position: int | None
    marker: str = ""
    dropped: bool = False


def byte_marker(raw: bytes | None) -> str:
    """'B1' or '91 A8': the bytes a token adds to a character another token began."""
    return raw.hex(" ").upper() if raw else "·"


def _gap(source: str, start: int, stop: int) -> list[TextPiece]:
    gap = source[start:stop]
    if not gap:
        return []
    return [TextPiece(gap, None, dropped=bool(gap.strip()))]


@dataclass(frozen=True)
class TokenSpan:
    """What a token brings to the drawn text: its position, its (start, end) character offsets into the
    source (None for a generated token), its display string and its bytes."""

    position: int
    span: tuple[int, int] | None
    marker: str
    raw: bytes | None = None


def text_pieces(tokens: Sequence[TokenSpan], source: str, first: bool = True, last: bool = True) -> list[TextPiece]:
    """The pieces that draw `tokens`, consecutive tokens of `source`.

    `first`: the tokens begin the text, so characters before the first span are drawn; `last`: they
    end it, so characters after the last span are. A special or generated token (no span) draws its
    display string as a marker.
    """
    pieces: list[TextPiece] = []
    shown = 0 if first else next((t.span[0] for t in tokens if _has_characters(t.span)), 0)
    for token in tokens:
        if not _has_characters(token.span):
            pieces.append(TextPiece("", token.position, marker=token.marker))
            continue
        start, end = int(token.span[0]), int(token.span[1])
        pieces += _gap(source, shown, start)
        shown = max(shown, start)
        if end > shown:
            pieces.append(TextPiece(source[shown:end], token.position))
            shown = end
        else:                                   # its characters were drawn by the token that began them
            pieces.append(TextPiece("", token.position, marker=byte_marker(token.raw)))
    if last:
        pieces += _gap(source, shown, len(source))
    return pieces


def _has_characters(span) -> bool:
    return span is not None and span[1] > span[0]


def dropped_characters(spans: Sequence, source: str) -> str:
    """The characters of `source`, spaces aside, that no token's span covers, in order: what a
    vocabulary without an unknown token cuts out of the text the model reads."""
    covered = bytearray(len(source))
    for span in spans:
        if span is not None and span[1] > span[0]:
            covered[int(span[0]):int(span[1])] = b"\x01" * (int(span[1]) - int(span[0]))
    # only the uncovered characters are visited: a loop over every character of an 8,000-token prompt took
    # 30 ms at each decoding step
    lost, at = [], covered.find(0)
    while at != -1:
        if not source[at].isspace():
            lost.append(source[at])
        at = covered.find(0, at + 1)
    return "".join(lost)


def dropped_warning(dropped: str) -> str:
    """One sentence naming the dropped characters (each once, in order of appearance)."""
    unique = "".join(dict.fromkeys(dropped))
    shown = " ".join(_named(ch) for ch in unique[:40])
    more = f" and {len(unique) - 40} more" if len(unique) > 40 else ""
    count = f"{len(dropped)} character{'s' if len(dropped) != 1 else ''}"
    # The characters first: a narrow panel cuts the end of its line.
    return f"⚠ Left out by the tokenizer: {shown}{more} ({count} no token covers; the model does not read them)"


def _named(ch: str) -> str:
    """A character as itself, or as U+XXXX where it would not show alone (a combining mark, a control)."""
    return ch if ch.isprintable() and not unicodedata.category(ch).startswith("M") else f"U+{ord(ch):04X}"


class TextLeftOutWarning(UserWarning):
    """Characters of a prompt that no token covers: the model never reads them."""


def warn_left_out(spans: Sequence, source: str) -> str:
    """Warn (TextLeftOutWarning) when the tokens leave characters of `source` out; returns them."""
    lost = dropped_characters(spans, source)
    if lost:
        warnings.warn(TextLeftOutWarning(dropped_warning(lost)), stacklevel=3)
    return lost
