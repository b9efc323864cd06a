"""A prompt past the context that the person declines to cut (issue 22): nothing runs, and every panel and the
status bar say why, naming the prompt's length, the model and its context, never "type a prompt and press Run"
(the person did type one)."""
from __future__ import annotations

import json

import pytest
from PySide6.QtCore import QSize
from PySide6.QtWidgets import QMessageBox
from tokenizers import Tokenizer

from explorer.app.panels.base import Panel
from tests.app.journey import journey_in_a_window, registered_panels
from tests.app.tiny_model import make_tiny_llama

pytestmark = pytest.mark.usefixtures("store_home")

LONG_PROMPT = "To be, or not to be, that is the question: " * 12


def test_a_long_prompt_declined_makes_every_panel_say_why_nothing_is_shown(qtbot, tmp_path, monkeypatch, dialogs):
    folder = make_tiny_llama(tmp_path / "tiny-llama")
    context = json.loads((folder / "config.json").read_text())["max_position_embeddings"]
    n = len(Tokenizer.from_file(str(folder / "tokenizer.json")).encode(LONG_PROMPT).ids)
    assert n > context                                   # the question is asked, not the run made
    dialogs["answer"] = QMessageBox.StandardButton.No
    with journey_in_a_window(qtbot, tmp_path, monkeypatch, QSize(1366, 768)) as journey:
        window = journey.window

        def opening():
            window.prompt.set_text(LONG_PROMPT)
            window.open_model(str(folder))
        journey.act("opening a model with a prompt past its context, and answering No", opening)
        assert any("longer than the context" in q or "Keep only the last" in q for q in dialogs["questions"])
        assert window.session.trace is None
        facts = (f"{n:,} tokens", "tiny-llama", f"context of {context:,}", "not run")
        checked = []
        for name in registered_panels():
            panel = journey.raise_panel(name)
            assert isinstance(panel, Panel)
            if not panel.needs_trace:                    # the Tokens panel draws the prompt's live tokens
                continue
            checked.append(name)
            drawn = panel.drawn()
            assert drawn.kind == "empty" and "type a prompt" not in drawn.why, f"{name}: {drawn}"
            assert all(fact in drawn.why for fact in facts), f"{name} says {drawn.why!r}"
            assert drawn.why in panel.note.text() and panel.note.isVisible(), name
        assert "attention" in checked and "next_token" in checked, checked
        assert all(fact in window.status.currentMessage() for fact in facts), window.status.currentMessage()
        assert window.status.fields["step"].text() == "not run"
