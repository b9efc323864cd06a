"""A run past the context, continued from its last tokens where the person agrees ("Continue from the last N
tokens?" Yes): the Tokens panel lists the tokens the model runs from, at positions 0…, each row the trace's own
token; the prompt's tokens still in the context keep their spans of the typed text, and the formula says that the
context slid. Before, it kept listing the typed prompt from its first token under the whole prompt's T, without the
generated tokens, so a row named a different token than Attention's same position (drive 20, S1)."""
from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from explorer.app.panels.tokens import TokensPanel
from tests.app.window_helpers import idle, opened

pytestmark = pytest.mark.usefixtures("store_home")

TEXT = "To be, or not to be, that is the question: " * 2


def tokens_panel(window) -> TokensPanel:
    return next(d.widget() for d in window.docks.values() if isinstance(d.widget(), TokensPanel))


def stepped_until_slid(qtbot, window, dialogs):
    """Step until the context is full and the window asks to continue from the last tokens (answered Yes);
    the trace just before and the one the model continued from."""
    while True:
        before, asked = window.session.trace, len(dialogs["questions"])
        window.actions.step.trigger()
        after = idle(qtbot, window, lambda: window.session.trace is not before or len(dialogs["questions"]) > asked)
        if len(dialogs["questions"]) > asked:
            assert "Continue from the last" in dialogs["questions"][-1]
            return before, idle(qtbot, window, lambda: window.session.trace is not before)
        assert after.n_tokens < 200, "the context never filled"


def assert_rows_are_the_trace(panel, trace):
    rows, ran = panel.rows, trace.token_ids.tolist()
    assert len(rows) == len(ran) and f"T = {len(ran)}" in panel.formula
    assert [rows[i].token_id for i in range(len(ran))] == ran
    assert [rows[i].position for i in range(len(ran))] == list(range(len(ran)))
    model = panel.table.model()
    assert model.rowCount() == len(ran)
    assert [int(model.index(i, 2).data()) for i in range(len(ran))] == ran     # the id column


def test_tokens_after_the_context_slid_are_the_tokens_the_model_runs(qtbot, window, tiny, dialogs):
    first = opened(qtbot, window, tiny, TEXT)
    tokens = window.session.tokens
    n_prompt = len(tokens.ids)
    assert first.token_ids.tolist() == list(tokens.ids) and n_prompt < first.model.max_positions - 1
    before, slid = stepped_until_slid(qtbot, window, dialogs)
    sequence = before.token_ids.tolist() + [before.steps[-1].chosen_id]
    gone = len(sequence) - slid.n_tokens                  # the tokens that left the context, all of them typed
    assert slid.token_ids.tolist() == sequence[gone:] and 0 < gone < n_prompt
    panel = tokens_panel(window)
    assert window.session.out_of_date is None
    assert_rows_are_the_trace(panel, slid)
    typed = n_prompt - gone                               # the prompt's tokens still in the context
    for position in (0, typed // 2, typed - 1):
        row = panel.rows[position]
        start, end = tokens.spans[gone + position]
        assert row.span == (start, end) and row.source_text == TEXT[start:end]
    assert all(panel.rows[i].span is None for i in range(typed, slid.n_tokens))    # generated, no typed text
    assert "slid" in panel.formula and f"first {gone:,} tokens" in panel.formula
    # a click on a row selects that position of the trace, the token Attention and Next token show there
    panel.table.selectRow(3)
    qtbot.waitUntil(lambda: window.session.selection.token == 3)
    assert panel.table.model().index(3, 2).data() == str(slid.token_ids[3])

    window.actions.step.trigger()                         # a step after the slide adds its row
    stepped = idle(qtbot, window, lambda: window.session.trace.n_steps == 2)
    assert_rows_are_the_trace(panel, stepped)


def test_tokens_after_every_typed_token_slid_out(qtbot, window, tiny, dialogs):
    opened(qtbot, window, tiny, TEXT)
    n_prompt, gone = len(window.session.tokens.ids), 0
    while gone < n_prompt:                                # each slide drops the sequence's first tokens
        before, slid = stepped_until_slid(qtbot, window, dialogs)
        gone += before.n_tokens + 1 - slid.n_tokens
    panel = tokens_panel(window)
    assert_rows_are_the_trace(panel, slid)
    assert all(panel.rows[i].span is None for i in range(slid.n_tokens))
    assert "slid" in panel.formula and f"{n_prompt:,} tokens" in panel.formula
    # an edit of the prompt makes the rows its live tokens again, under the out-of-date note
    window.prompt.set_text("Or to take arms")
    qtbot.waitUntil(lambda: window.session.out_of_date is not None)
    edited = window.session.tokens
    qtbot.waitUntil(lambda: [panel.rows[i].token_id for i in range(len(panel.rows))] == list(edited.ids))
    window.prompt.set_text(TEXT)
    qtbot.waitUntil(lambda: window.session.out_of_date is None)
    qtbot.waitUntil(lambda: len(panel.rows) == slid.n_tokens)
    assert_rows_are_the_trace(panel, slid)


def test_a_generated_tokens_row_names_its_bytes(qtbot, window, tiny, dialogs):
    from tokenizers import Tokenizer
    from transformers.convert_slow_tokenizer import bytes_to_unicode

    opened(qtbot, window, tiny, TEXT)
    window.actions.step.trigger()
    trace = idle(qtbot, window, lambda: window.session.trace.n_steps == 2)
    panel = tokens_panel(window)
    row = trace.n_tokens - 1                              # the token generated at step 0
    vocabulary = Tokenizer.from_file(str(tiny / "tokenizer.json"))
    piece = vocabulary.id_to_token(int(trace.token_ids[row]))
    byte_of = {char: byte for byte, char in bytes_to_unicode().items()}
    expected = bytes(byte_of[char] for char in piece).hex(" ")
    tip = panel.table.model().index(row, 1).data(Qt.ItemDataRole.ToolTipRole)
    assert tip == f"bytes: {expected}"
