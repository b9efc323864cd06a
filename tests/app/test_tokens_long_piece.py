"""A token that covers a long run of text is drawn in the Tokens panel's text cut to its first characters, the
rest counted: MiniLM reads a pasted line of a million characters with no space as one [UNK] token, and the
panel laid out all its characters as one run with nowhere to wrap, which Qt does in quadratic time: 92 s at the
paste and at each edit after it (drive28). Expectation: the panel's text is drawn in seconds, names how many
characters are not drawn, and draws the token's first characters as they are."""
from __future__ import annotations

import time

import pytest
from PySide6.QtWidgets import QApplication

from explorer.app.panels.tokens import TokensPanel
from tests.app.window_helpers import idle, new_window

pytestmark = [pytest.mark.usefixtures("store_home"), pytest.mark.realmodel]

RUN = "abcdefghij" * 100_000                   # a million characters with no space: one [UNK] of MiniLM


@pytest.fixture(scope="module")
def minilm():
    from explorer.core import store

    return store.pulled_path("minilm-l6")


def test_one_token_of_a_million_characters_is_drawn_cut_and_counted(qtbot, tmp_path, dialogs, minilm):
    assert minilm is not None, "minilm-l6 is not pulled (make test pulls it)"
    window = new_window(qtbot, tmp_path)
    window.prompt.set_text("a short text")
    window.open_model(str(minilm))
    idle(qtbot, window, lambda: window.session.trace is not None)
    panel = window.findChild(TokensPanel)
    window.docks["tokens"].raise_()
    started = time.perf_counter()
    window.prompt.set_text(RUN)
    qtbot.waitUntil(lambda: "characters more" in panel.text_view.toPlainText(), timeout=60_000)
    QApplication.processEvents()
    panel.text_view.grab()                         # laid out and painted
    took = time.perf_counter() - started
    shown = panel.text_view.toPlainText()
    assert "999,760 characters more" in shown and RUN[:240] in shown and RUN[:241] not in shown, shown[:300]
    assert took < 15.0, f"the panel took {took:.1f} s to draw one long token"
    window.close()
