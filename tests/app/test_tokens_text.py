"""The Tokens panel's words (explorer.app.panels.tokens_text), read from the rows alone: T is the number of rows,
an encoder-decoder's source rows behind a task token name the encoder's T_KV = task tokens + rows, and the source
line lights the token selected (its name where it writes no text)."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from explorer.app.panels.tokens_text import count_formula, source_html, source_offset
from explorer.app.widgets.token_table import TokenRows


def translation(source_ids, texts):
    encoder = SimpleNamespace(token_ids=np.asarray(source_ids), token_text=texts)
    return SimpleNamespace(encoder=encoder, n_steps=1, model=SimpleNamespace(is_encoder_decoder=True))


def test_source_rows_behind_a_task_token_count_the_encoders_tokens():
    trace = translation([9, 5, 6, 7], ["<2zh>", "a", "b", "c"])
    rows = TokenRows(None, [5, 6, 7], ["a", "b", "c"])
    assert source_offset(trace, rows) == 1
    formula = count_formula(rows, trace, None)
    assert "T = 3" in formula and "T_{KV} = 4" in formula and "task token <2zh>" in formula
    other = TokenRows(None, [5, 8, 7], ["a", "x", "c"])       # an edited source: not the encoder's
    assert source_offset(trace, other) is None and "T_{KV}" not in count_formula(other, trace, None)


def test_the_sequence_is_written_for_its_own_length():
    """No model open or an empty text: no tokens, not "(x_1, …, x_0)" (drive32)."""
    words = [TokenRows(None, list(range(n)), [str(i) for i in range(n)]) for n in (0, 1, 2, 12)]
    formulas = [count_formula(rows, None, None) for rows in words]
    assert formulas[0].startswith("x = tokenize(text) = (),") and "T = 0" in formulas[0]
    assert "= (x_1)," in formulas[1] and "= (x_1, x_2)," in formulas[2]
    assert "= (x_1, …, x_{12})," in formulas[3] and "T = 12" in formulas[3]


def test_the_source_line_lights_the_selected_token():
    encoder = translation([9, 5], ["<2zh>", "hi"]).encoder
    words = {9: "", 5: "hi"}
    decode = lambda ids: "".join(words[int(i)] for i in ids)       # noqa: E731
    assert source_html(encoder, None, decode) == "hi"
    assert "&lt;2zh&gt;</span>hi" in source_html(encoder, 0, decode)    # no text: its name, escaped
    assert ">hi</span>" in source_html(encoder, 1, decode)
