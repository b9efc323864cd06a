"""A prompt past the context, run as its last tokens where the person agrees: the Tokens panel lists the tokens
the model ran (the prompt's tail, at positions 0…), each with its own span of the typed text, and says that the
first ones were cut. Before, it listed the prompt's FIRST tokens under T = the whole prompt's count, so a row
named a different token than the same position in Attention (drive 19, S2)."""
from __future__ import annotations

import pytest
from PySide6.QtWidgets import QMessageBox

from explorer.app.panels.tokens import TokensPanel
from tests.app.window_helpers import idle, opened

pytestmark = pytest.mark.usefixtures("store_home")


def test_a_cut_prompt_lists_the_tokens_the_model_ran(qtbot, window, tiny, dialogs):
    opened(qtbot, window, tiny)
    text = "To be, or not to be, " * 20 + "that is the question"
    dialogs["answer"] = QMessageBox.StandardButton.Yes
    window.prompt.set_text(text)
    window.actions.run.trigger()
    trace = idle(qtbot, window, lambda: window.session.trace.steps[0].n_new < len(window.session.tokens.ids))
    tokens = window.session.tokens                       # the whole prompt, tokenized by the tokenizer itself
    ran = trace.token_ids.tolist()
    cut = len(tokens.ids) - len(ran)
    assert cut > 0 and ran == list(tokens.ids)[cut:]
    panel = next(d.widget() for d in window.docks.values() if isinstance(d.widget(), TokensPanel))
    panel.redraw()
    rows = panel.rows
    assert len(rows) == len(ran)
    for position in (0, 1, len(ran) // 2, len(ran) - 1):
        row = rows[position]
        assert row.position == position and row.token_id == ran[position]
        start, end = tokens.spans[cut + position]
        assert row.span == (start, end) and row.source_text == text[start:end]
    assert text.endswith(rows[len(ran) - 1].source_text)
    model = panel.table.model()
    assert model.rowCount() == len(ran)
    assert model.index(0, 2).data() == str(ran[0])       # the id column's first row: the first token run
    assert f"T = {len(ran)}" in panel.formula and f"{cut:,}" in panel.formula
    shown = panel.text_view.toPlainText()
    assert not shown.startswith(text[: tokens.spans[cut][0]].strip()[:20]), "the cut text is drawn as run"
