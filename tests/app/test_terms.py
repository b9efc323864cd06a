"""A model under terms of use (Gemma) opens only after the person accepts its terms, and is asked once."""
from __future__ import annotations

import pytest
from PySide6.QtWidgets import QMessageBox

from explorer.app.window import model_refs
from explorer.core import store


@pytest.fixture
def gemma_in_store(monkeypatch, tmp_path):
    """A store whose gemma3-270m looks pulled (its files exist), so the reference resolves to it."""
    monkeypatch.setenv("TRANSFORMER_EXPLORER_HOME", str(tmp_path / "store"))
    entry = store.PULLABLE["gemma3-270m"]
    folder = tmp_path / "store" / "gemma3-270m"
    folder.mkdir(parents=True)
    (folder / store.PULLED_FILE).write_text("{}")
    for file in entry.files:
        (folder / file.name).write_bytes(b"")
    return store.pulled_path("gemma3-270m")


@pytest.fixture
def window(window_recording_loads):
    return window_recording_loads


def answer_with(monkeypatch, answer):
    asked = []

    def question(parent, title, text, *args):
        asked.append(text)
        return answer

    monkeypatch.setattr(QMessageBox, "question", question)
    return asked


def test_the_terms_are_asked_once_and_a_refusal_opens_nothing(window, gemma_in_store, monkeypatch):
    assert model_refs.terms_of(str(gemma_in_store))[0] == "gemma3-270m"
    asked = answer_with(monkeypatch, QMessageBox.StandardButton.No)
    window.open_model("gemma3-270m")
    assert len(asked) == 1 and "Gemma Terms of Use" in asked[0] and window.loads == []
    asked = answer_with(monkeypatch, QMessageBox.StandardButton.Yes)
    window.open_model(str(gemma_in_store))
    window.open_model("gemma3-270m")
    assert len(asked) == 1 and window.loads == [str(gemma_in_store), "gemma3-270m"]


def test_models_without_terms_are_never_asked(window, gemma_in_store, monkeypatch, tmp_path):
    asked = answer_with(monkeypatch, QMessageBox.StandardButton.No)
    window.open_model(str(tmp_path / "some-model"))
    window.open_model("smollm2-135m")
    assert asked == [] and len(window.loads) == 2
