"""The Tokens panel's words about its rows: the count formula x = tokenize(text) with what it leaves out (an
earlier step, a cut or slid context, an encoder's task tokens), and the source line of a translation.

Pure functions of the trace and the rows (explorer.app.widgets.token_table.TokenRows), so that what the formula
says is read from the same rows the table lists.
"""
from __future__ import annotations

import html

import numpy as np

from explorer.app.panels.base import visible_text
from explorer.app.widgets.token_pieces import SELECTED
from explorer.app.widgets.token_table import TokenRows, n_tokens_at
from explorer.views.words import step_name


def source_offset(trace, rows) -> int | None:
    """Where the rows are an encoder-decoder's source as typed: the encoder position of row 0 (1 behind
    a task token the decoder put in front); else None (the rows are the trace's own tokens)."""
    if trace is None or trace.encoder is None or not isinstance(rows, TokenRows) or not len(rows):
        return None
    source = np.asarray(trace.encoder.token_ids, dtype=np.int64)
    offset = len(source) - len(rows)
    return offset if offset >= 0 and np.array_equal(source[offset:], rows.ids) else None


def count_formula(rows, trace, step: int | None) -> str:
    """x = tokenize(text), T tokens, as of `step` (None: the latest); for a translation whose encoder reads a task
    token before the typed source (<2zh>), also the encoder's count T_KV, as the cross-attention header writes it,
    so the two match."""
    n = len(rows)
    formula = f"x = tokenize(text) = {_sequence(n)},  x_i ∈ {{0, …, V−1}}, T = {n}"
    offset = source_offset(trace, rows)
    earlier = step is not None and trace is not None and step < trace.n_steps - 1
    if earlier and n == n_tokens_at(trace, step) and offset is None:     # not an edited prompt
        formula += f";  as of {step_name(step)} of {trace.n_steps - 1}"
    note = getattr(rows, "cut_note", "")
    if note:
        formula += f";  {note}"
    if offset:
        added = " ".join(visible_text(text) for text in trace.encoder.token_text[:offset])
        formula += (f";  the encoder reads T_{{KV}} = {n + offset} source tokens: "
                    f"the task token{'s' if offset > 1 else ''} {added}, then these {n}")
    return formula


def _sequence(n: int) -> str:
    """(x_1, …, x_n) for n tokens, written out where it is shorter than that: "(x_1, …, x_0)" stood for none."""
    if n <= 3:
        return "(" + ", ".join(f"x_{i}" for i in range(1, n + 1)) + ")"
    return f"(x_1, …, x_{{{n}}})"


def source_html(encoder, selected: int | None, decode_text) -> str:
    """The source as text (`decode_text`: ids -> text), the token selected in a source view (a source position,
    not a target one) lit; a lit token that writes no text (the task token) shows its name."""
    if selected is None:
        return html.escape(decode_text(encoder.token_ids))
    parts = []
    for i, token_id in enumerate(encoder.token_ids):
        text = decode_text([int(token_id)])
        if i == selected:
            shown = html.escape(text or visible_text(encoder.token_text[i]))
            text = f"<span style='background-color:{SELECTED}; color:#000000'>{shown}</span>"
        else:
            text = html.escape(text)
        parts.append(text)
    return "".join(parts)
