"""The Tokens panel's notes: the characters no token covers are named once per tokenisation (a decoding step keeps
the prompt's tokens, so its warning stays without the prompt being scanned again: at 8,000 tokens the scan took
20 ms of every step; another prompt is scanned anew), the translator's warning of them is never cut at the dock's
edge, and out of date it says it shows the edited prompt's tokens."""
from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import QSize

from explorer.app.panels import tokens as tokens_panel
from explorer.app.panels.tokens import TokensPanel
from explorer.app.state.session import Session
from tests.app.journey import BUNDLED, journey_in_a_window, walk_on_screen
from tests.app.shared_window import make
from tests.app.test_token_text import bundled, not_read

pytestmark = pytest.mark.usefixtures("store_home")  # the store in the test's folder


@pytest.fixture(scope="module")
def decoder():
    from explorer.core.decode import Decoder, RecordOptions
    from explorer.core.runtime import from_tensors
    from tests.core.conftest import make_hf_model

    hf_model = make_hf_model("llama")
    decoder = Decoder(from_tensors(hf_model.config.to_dict(), hf_model.state_dict()), RecordOptions(), capacity=32)
    decoder.prefill(np.arange(6))
    return decoder


def test_a_step_keeps_the_left_out_characters_named_without_scanning_the_prompt_again(qtbot, decoder, monkeypatch):
    translator = bundled("translate-en-zh")
    text = "The quick brown fox"
    prompt = translator.encode(text)
    expected = not_read(text, translator.decode(prompt.ids))        # what the model does not read
    scanned = []
    scan = tokens_panel.dropped_characters
    monkeypatch.setattr(tokens_panel, "dropped_characters", lambda spans, source: scanned.append(source) or scan(
        spans, source))
    session = Session()
    panel = make(qtbot, session, TokensPanel)
    session.set_tokens(prompt)
    session.set_trace(decoder.trace)
    warning = panel.dropped.text()
    assert scanned == [text] and panel.dropped.isVisible() and all(f" {ch}" in warning for ch in expected)
    for _ in range(3):
        session.set_trace(decoder.step())
        assert panel.dropped.isVisible() and panel.dropped.text() == warning
    assert scanned == [text]
    session.set_tokens(translator.encode("March 5, 2024"))          # another prompt: scanned, nothing left out
    assert scanned == [text, "March 5, 2024"] and not panel.dropped.isVisible()
    session.set_tokens(translator.encode(text))                     # the first again, as a new tokenisation
    assert scanned[-1] == text and panel.dropped.isVisible() and panel.dropped.text() == warning


@pytest.fixture
def journey(qtbot, tmp_path, screen, dialogs):
    """A person's journey (tests/app/journey.py) through a new main window sized to the emulated `screen`."""
    yield from walk_on_screen(qtbot, tmp_path, screen, dialogs)


def red_ink_columns(widget) -> list[int]:
    """The pixel columns of `widget`, as drawn, that hold red ink (the warning's text)."""
    image = widget.grab().toImage()
    ratio = image.devicePixelRatio()
    columns = set()
    for x in range(image.width()):
        for y in range(image.height()):
            colour = image.pixelColor(x, y)
            if colour.red() - colour.green() > 60 and colour.red() - colour.blue() > 60:
                columns.add(int(x / ratio))
                break
    return sorted(columns)


def test_the_translators_left_out_warning_is_never_cut_at_the_docks_edge(journey):
    """The Tokens panel's warning of the characters the translator's tokenizer leaves out ("T q k" of "The quick
    brown fox", by its tokenizer.json's own round trip) ends inside the dock, elided, with the whole sentence in
    its tooltip; at 1366x768 it was cut at the dock's edge mid-word ("… (3 characters ne")."""
    text = "The quick brown fox"
    tokenizer = bundled("translate-en-zh")
    left_out = not_read(text, tokenizer.decode(tokenizer.encode(text).ids))
    assert left_out
    journey.open(BUNDLED / "translate-en-zh", text)
    panel = journey.raise_panel("tokens")
    warning = panel.dropped
    assert warning.isVisible()
    whole = warning.toolTip()
    assert all(f" {ch}" in whole for ch in left_out), f"the tooltip {whole!r} does not name {left_out!r}"
    assert "the model does not read them" in whole, f"the tooltip is not the whole sentence: {whole!r}"
    ink = red_ink_columns(warning)
    assert ink, "the warning draws nothing"
    assert ink[-1] < warning.width() - 2, \
        f"the warning's text runs to the edge of its {warning.width()} px line (ink up to column {ink[-1]}): cut"
    assert warning.mapTo(panel, warning.rect().topRight()).x() < panel.width()


def test_tokens_out_of_date_says_it_shows_the_edited_prompts_tokens(qtbot, tmp_path, monkeypatch):
    """An edited prompt: every panel is out of date, but Tokens already shows the new text's tokens; its note
    said only "Out of date", as if the tokens in view were the old ones."""

    with journey_in_a_window(qtbot, tmp_path, monkeypatch, QSize(1366, 768)) as journey:
        window = journey.window
        journey.open(BUNDLED / "shakespeare-gqa", "To be, or not to be")
        tokens = journey.raise_panel("tokens")
        edited = "Now is the winter of our discontent made glorious summer"
        expected = len(window.controller.summary.tokenizer.encode(edited).ids)
        journey.act("editing the prompt", lambda: window.prompt.set_text(edited))
        qtbot.waitUntil(lambda: window.session.out_of_date and window.session.tokens is not None
                        and len(window.session.tokens.ids) == expected, timeout=10000)
        journey.idle("the live tokens")
        assert tokens.table.token_model.rowCount() >= expected
        assert f"the edited prompt's {expected} tokens" in tokens.note.text(), tokens.note.text()
