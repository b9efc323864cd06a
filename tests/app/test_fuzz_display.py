"""Random Unicode through the prompt editor, the live tokenization and the token panel, without a crash.

The text mixes everything a clipboard can hold: emoji (also joined and
flagged), combining marks, right-to-left scripts and bidi controls, C0/C1
control characters, and lone surrogates, which Qt drops on the way into the
editor and which the tokenizer replaces if they reach it another way.
"""
from __future__ import annotations

import re

import numpy as np
import pytest
import transformers  # noqa: E402,F401  (the tiny model is written with it; missing, the run fails, never skips)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from explorer.app.panels.tokens import SPAN_WINDOW
from explorer.views.token_text import TokenSpan, text_pieces
from tests.app.shared_window import window_with_tiny_model

SPECIAL = ["😀", "👍🏽", "👩‍👩‍👧", "🇫🇷", "e\u0301", "\u0308", "\u20dd", "مرحبا", "שלום", "\u202e", "\u200f", "\u2066",
           "\x00", "\x07", "\x1b", "\x7f", "\x85", "\t", "\n", "\r\n", "\u2028", "\ufeff", "\ufffd", "𝔘", "東京"]
SURROGATES = st.integers(0xD800, 0xDFFF).map(chr)
PIECES = st.one_of(st.text(max_size=8), st.sampled_from(SPECIAL), SURROGATES)
CLIPBOARD = st.lists(PIECES, max_size=12).map("".join)
FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
COUNTS = {"typed": 0, "tokenized directly": 0, "run": 0}   # examples that reached their test's last assert
STARTED: set[str] = set()


@pytest.fixture(scope="module")
def dialogs():
    return {}


@pytest.fixture(scope="module")
def window(qapp, tmp_path_factory, dialogs):
    with window_with_tiny_model(qapp, tmp_path_factory.mktemp("fuzz"), dialogs) as window:
        yield window


def table_ids(window) -> list[int]:
    table = window.docks["tokens"].widget().table
    return [int(table.item(r, 2).text()) for r in range(table.rowCount())]


def shown_ids(window, tokens) -> list[int]:
    """What the token panel must show: the live tokens while they differ from the trace (an emptied prompt shows
    none, not the trace's tokens as if generated), else the trace's."""
    live, trace = tokens.ids.tolist(), window.session.trace
    if trace is None or not trace.steps:
        return live
    ran = trace.token_ids.tolist()
    return live if not live or ran[:len(live)] != live else ran


def check_display(window, tokens) -> None:
    """The token panel shows these tokens (or the run they start), each span inside the text it came from."""
    panel = window.docks["tokens"].widget()
    assert table_ids(window) == shown_ids(window, tokens)
    assert [row.token_id for row in panel.rows] == shown_ids(window, tokens)
    for start, end in tokens.spans:
        assert 0 <= start <= end <= len(tokens.source)
    assert not any(0xD800 <= ord(c) <= 0xDFFF for c in tokens.source)
    assert len(tokens.text) == len(tokens.ids) == len(tokens.raw)
    table = panel.table
    assert all(table.item(r, 1).text() for r in range(table.rowCount())), "a token with no visible text"
    anchors = len(set(re.findall(r'"tok:(\d+)"', panel.text_view.toHtml())))
    drawn = [panel.rows[i] for i in panel.span_window]     # a long text is drawn a window of tokens at a time
    assert len(drawn) == min(len(panel.rows), SPAN_WINDOW)
    visible = [row for row in drawn if any(c.isprintable() and not c.isspace() for c in row.source_text)]
    assert len(visible) <= anchors <= len(drawn), "a token with visible text that cannot be clicked"
    if len(drawn) == len(tokens.ids):                      # the whole text drawn: each character exactly once
        spans = [TokenSpan(i, tokens.spans[i], tokens.text[i], tokens.raw[i]) for i in range(len(tokens.ids))]
        assert "".join(piece.text for piece in text_pieces(spans, tokens.source)) == tokens.source


@FUZZ
@given(text=CLIPBOARD)
def test_any_pasted_text_is_tokenized_and_shown(qtbot, window, dialogs, text):
    STARTED.add("typed")
    with qtbot.captureExceptions() as exceptions:
        window.prompt.set_text(text)
        qtbot.wait(1)
    assert not exceptions, exceptions
    tokens = window.session.tokens
    # What the editor holds is what was tokenized (up to a lone U+FEFF, which Qt sometimes reports
    # and sometimes strips from the same document).
    assert tokens.source.replace("\ufeff", "") == window.prompt.text.replace("\ufeff", "")
    expected = window.controller.summary.tokenizer.encode(tokens.source).ids
    assert tokens.ids.tolist() == expected.tolist()
    check_display(window, tokens)
    assert not dialogs["warnings"]
    COUNTS["typed"] += 1


@FUZZ
@given(text=CLIPBOARD)
def test_text_that_skips_the_editor_still_tokenizes_with_surrogates_replaced(qtbot, window, dialogs, text):
    STARTED.add("tokenized directly")
    with qtbot.captureExceptions() as exceptions:
        window.controller.set_prompt(text)                 # e.g. a session file or a drop, not the editor
        qtbot.wait(1)
    assert not exceptions, exceptions
    tokens = window.session.tokens
    assert len(tokens.source) == len(text)
    assert all(a == b or (0xD800 <= ord(a) <= 0xDFFF and b == "\ufffd") for a, b in zip(text, tokens.source))
    check_display(window, tokens)
    assert not dialogs["warnings"]
    COUNTS["tokenized directly"] += 1


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=CLIPBOARD.filter(lambda t: t.strip()))
def test_running_random_text_shows_the_trace_tokens(qtbot, window, dialogs, text):
    STARTED.add("run")
    window.prompt.set_text(text)
    ids = window.session.tokens.ids
    asked = len(dialogs["questions"])
    if len(ids) == 0:                  # the editor dropped lone surrogates and kept nothing with a token (nor a
        # lone U+FEFF, which Qt's document sometimes reports and sometimes strips, as in the first test above)
        assert window.controller.summary.tokenizer.encode(window.prompt.text.replace("\ufeff", "")).ids.size == 0
    elif len(ids) < window.controller.summary.info.max_positions:
        window.actions.run.trigger()
        qtbot.waitUntil(lambda: not window.worker.busy and window.session.trace is not None
                        and np.array_equal(window.session.trace.token_ids, ids), timeout=60000)
        assert table_ids(window) == ids.tolist()
    else:                                                  # longer than the context: asked, answered No
        window.actions.run.trigger()
        qtbot.waitUntil(lambda: not window.worker.busy, timeout=60000)
        assert len(dialogs["questions"]) == asked + 1 and "Keep only the last" in dialogs["questions"][-1]
    assert not dialogs["warnings"]
    COUNTS["run"] += 1


def test_a_token_of_invisible_whitespace_can_still_be_clicked(qtbot, window):
    window.prompt.set_text("a\x85b")
    panel = window.docks["tokens"].widget()
    assert len(set(re.findall(r'"tok:(\d+)"', panel.text_view.toHtml()))) == len(panel.rows)


def test_a_hundred_thousand_characters_are_tokenized_and_shown(qtbot, window, dialogs):
    text = ("To be, or not to be 😀 مرحبا e\u0301\n" * 4000)[:100_000]
    window.prompt.set_text(text)
    tokens = window.session.tokens
    assert len(tokens.source) == 100_000 and len(tokens.ids) > 10_000
    check_display(window, tokens)
    window.actions.run.trigger()                           # longer than the context: asked, answered No
    qtbot.waitUntil(lambda: not window.worker.busy, timeout=60000)
    assert "Keep only the last 63 tokens?" in dialogs["questions"][-1] and not dialogs["warnings"]


def test_every_fuzz_test_that_ran_checked_all_its_examples():
    """Each fuzz test above counts the examples that reached its last assert (the README's 120 pastes)."""
    expected = {"typed": 60, "tokenized directly": 60, "run": 15}
    for name in STARTED:
        assert COUNTS[name] >= expected[name], f"{name}: only {COUNTS[name]} of {expected[name]} examples checked"
