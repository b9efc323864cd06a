"""The Tokens panel's coloured text as rich text: each piece of explorer.views.token_text drawn as a
span of its token's colour, markers small, dropped characters struck out."""
from __future__ import annotations

import html

from explorer.app.widgets.text_helpers import readable
from explorer.views.token_text import TextPiece

SPAN_COLOURS = ("#2d4f7c", "#5a3d6e", "#2f6a4f", "#7a4a2a", "#3f5f6f", "#6e3b4f")
SELECTED = "#ffb000"
MARKER_STYLE = "font-size:small"        # drawn small: not characters of the text (a size relative to the panel's
                                        # font, so it grows with it in View ▸ Presentation)
DROPPED_STYLE = "background-color:#b00020; color:#ffffff; text-decoration:line-through"
# A piece's characters drawn at most, the rest counted in a marker: Qt lays out a run with nowhere to wrap in time
# that grows with the square of its length, and MiniLM read a pasted line of a million characters as one [UNK]
# token, which froze the window 92 s at the paste and at every edit after it (drive28).
PIECE_CHARS = 240


def piece_html(piece: TextPiece, selected: int | None) -> str:
    """One piece as rich text: a token's characters on its colour, a marker (bytes that end a character
    another token began, a special or generated token) small and dim, dropped characters struck out."""
    text, more = piece.text[:PIECE_CHARS], len(piece.text) - PIECE_CHARS
    rest = marker_html(f"… {more:,} characters more") if more > 0 else ""
    if piece.position is None:
        if not piece.dropped:
            return characters_html(text) + rest
        return f"<a href='dropped:'><span style='{DROPPED_STYLE}'>{characters_html(text)}{rest}</span></a>"
    chosen = piece.position == selected
    colour = SELECTED if chosen else SPAN_COLOURS[piece.position % len(SPAN_COLOURS)]
    fg = "#000000" if chosen else "#ffffff"
    # Characters that draw nothing (U+0085, zero-width marks) would leave an empty, unclickable anchor:
    # their names are drawn beside them.
    body = characters_html(text) if text.strip() or text.isprintable() or "\n" in text else (
        characters_html(text) + marker_html(readable(text)))
    body += rest + (marker_html(piece.marker) if piece.marker else "")
    return f"<a href='tok:{piece.position}'><span style='background-color:{colour}; color:{fg}'>{body}</span></a>"


def characters_html(text: str) -> str:
    """Characters of the text as they are; a newline as a ↵ marker and a line break."""
    return (marker_html("↵") + "<br>").join(html.escape(line) for line in text.split("\n"))


def marker_html(marker: str) -> str:
    return f"<span style='{MARKER_STYLE}'>{html.escape(marker)}</span>"
