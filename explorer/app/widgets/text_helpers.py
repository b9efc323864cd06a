"""What the "why" panels (derivation, attribution, residual stream, the block walk's text) share, kept
out of every panel so that no panel imports another: a token's text made visible, and the position a
selection points at.
"""
from __future__ import annotations

import unicodedata

from explorer.app.state.session import Selection

_NAMED = {"\xa0": "⍽", "\u200b": "⟨ZWSP⟩", "\ufeff": "⟨BOM⟩", "\u3000": "⟨IDSP⟩"}


def readable(text: str) -> str:
    """A token's text with nothing invisible left: named marks for odd spaces, U+XXXX for format and
    control characters, '∅' for the empty string."""
    out = []
    for ch in text:
        if ch in _NAMED:
            out.append(_NAMED[ch])
        elif unicodedata.category(ch) in ("Zs", "Zl", "Zp", "Cc", "Cf", "Co", "Cn") and ch != " ":
            out.append(f"⟨U+{ord(ch):04X}⟩")
        else:
            out.append(ch)
    return "".join(out) or "∅"


def selected_position(trace, selection: Selection) -> int | None:
    """The position the selection points at: its token, else the selected step's last, else the last."""
    if trace is None or not trace.steps:
        return None
    if selection.token is not None:
        return int(selection.token)
    if selection.step is not None:
        return int(trace.steps[selection.step].positions[-1])
    return trace.n_tokens - 1
