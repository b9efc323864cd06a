"""What panels say: a formula as rich text with real sub- and superscripts, a shape, a token's display text, the
words of a stopped state, and why a decoder's view has nothing to show for a model."""
from __future__ import annotations

import html
import re

_SCRIPT = re.compile(r"([_^])(\{[^}]*\}|[^\s{}_^=,·()])")


def formula_html(formula: str) -> str:
    """`Q_h = X W_h^Q ∈ ℝ^{7×64}` as rich text with real subscripts and superscripts."""
    def script(match: re.Match) -> str:
        tag = "sub" if match.group(1) == "_" else "sup"
        body = match.group(2)
        body = body[1:-1] if body.startswith("{") else body
        return f"<{tag}>{body}</{tag}>"

    return _SCRIPT.sub(script, html.escape(formula, quote=False))


def visible_text(text: str) -> str:
    """A token's display text with anything unprintable named (a no-break space reads ⟨U+00A0⟩), never a
    Python escape such as '\\xa0'."""
    return "".join(c if c.isprintable() and c != "\u00a0" else f"⟨U+{ord(c):04X}⟩" for c in text)


def dims(*sizes: int) -> str:
    """`ℝ^{7×64}` for the shape (7, 64)."""
    return "ℝ^{" + "×".join(str(int(s)) for s in sizes) + "}"


def stopped_text(what: str, button: str = "Compute") -> str:
    """The words of a panel's stopped state: what a Stop or Cancel cut off, and the button that asks again."""
    return f"Stopped: {what} was cancelled. Press {button} to run it."


def decoder_view_unavailable(trace, what: str) -> str | None:
    """Why a view of a decoder's own attention and next token has nothing to show for `trace`'s model."""
    return decoder_model_unavailable(trace.model, what) if trace.steps else None


def decoder_model_unavailable(model, what: str) -> str | None:
    """Why `what`, a view or job of a decoder's own next token, cannot run on `model` (None when it can)."""
    if model is None:
        return None
    if model.is_encoder_only:
        return f"{what} needs a decoder: {model.name} is an encoder, which predicts no next token."
    if model.is_encoder_decoder:
        return (f"{what} needs a decoder-only model: {model.name} is an encoder–decoder (see Attention for its "
                "self- and cross-attention).")
    return None
