"""The Tokens panel scans the prompt for characters no token covers once per tokenisation (issue 22): a decoding
step keeps the prompt's tokens, so its warning stays as it was without the prompt being scanned again (at 8,000
tokens the scan took 20 ms of every step); another prompt is scanned anew."""
from __future__ import annotations

import numpy as np
import pytest

from explorer.app.panels import tokens as tokens_panel
from explorer.app.panels.tokens import TokensPanel
from explorer.app.state.session import Session
from tests.app.shared_window import make
from tests.app.test_token_text import bundled, not_read


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
