"""File ▸ Close Model after the translator: the editor is named a prompt again, not the translator's "Source".

Seen on Xvfb at 1366x768: the translator open, then File ▸ Close Model; every panel said no model was open, and
the editor's dock still read "Source" (with the source's placeholder), a text of a model no longer there.
"""
from __future__ import annotations

import pytest
from PySide6.QtCore import QSize

from explorer.app.window.prompt_editor import PLACEHOLDERS
from tests.app.journey import BUNDLED, journey_in_a_window

pytestmark = pytest.mark.usefixtures("store_home")  # the store in the test's folder


def test_closing_the_translator_names_the_editor_a_prompt_again(qtbot, tmp_path, monkeypatch):
    with journey_in_a_window(qtbot, tmp_path, monkeypatch, QSize(1366, 768)) as journey:
        window = journey.window
        journey.open(BUNDLED / "translate-en-zh", "To be, or not to be")
        assert window.docks["prompt"].windowTitle() == "Source"
        journey.act("File ▸ Close Model", window.menus.close_model_action.trigger)
        assert window.docks["prompt"].windowTitle() == "Prompt"
        assert window.prompt.placeholderText() == PLACEHOLDERS["prompt"]
