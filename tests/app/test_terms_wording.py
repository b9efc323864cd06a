"""The Gemma terms are asked for both before a pull and before opening a model already in the store; the
sentence each dialog shows names what the person is doing then (the opening dialog said "by pulling it"
of a model pulled long before)."""
from __future__ import annotations

from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QMessageBox

from explorer.app.window import model_opening
from explorer.app.window.settings import AppSettings


def asked_when_opening(tmp_path, monkeypatch, reference: str) -> str:
    asked = []
    monkeypatch.setattr(QMessageBox, "question",
                        lambda parent, title, text, *a: asked.append(text) or QMessageBox.StandardButton.No)
    settings = AppSettings(QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat))
    assert not model_opening.terms_accepted(None, settings, reference)
    assert len(asked) == 1
    return asked[0]


def test_opening_a_pulled_gemma_speaks_of_using_it_not_of_pulling_it(qapp, tmp_path, monkeypatch):
    text = asked_when_opening(tmp_path, monkeypatch, "gemma3-270m")
    assert "ai.google.dev/gemma/terms" in text
    assert "using it" in text, text


def test_the_terms_before_a_pull_still_speak_of_pulling():
    from explorer.core import store

    assert "pulling" in store.PULLABLE["gemma3-270m"].terms
