"""Decoding stops at end-of-sequence and says so; the translator's source and target are shown as text."""
from __future__ import annotations

from pathlib import Path

import pytest
import transformers  # noqa: E402,F401  (the tiny model is written with it; missing, the run fails, never skips)

from tests.app.window_helpers import idle, new_window, opened

pytestmark = pytest.mark.usefixtures("store_home")  # the store in the test's folder

TRANSLATOR = Path(__file__).resolve().parents[2] / "resources" / "models" / "translate-en-zh"


@pytest.fixture
def translator(qtbot, tmp_path, dialogs):
    window = new_window(qtbot, tmp_path)
    window.resize(1400, 900)
    window.docks["tokens"].raise_()
    opened(qtbot, window, TRANSLATOR, prompt="March 14, 2024")
    yield window
    window.close()


def test_steps_stop_at_end_of_sequence_and_say_so(qtbot, translator):
    notices = []
    translator.controller.notice.connect(notices.append)
    for _ in range(25):                          # far more than the translation needs, pressed at once
        translator.actions.step.trigger()
    trace = idle(qtbot, translator)
    chosen = [translator.session.display_token(s.chosen_id) for s in trace.steps]
    assert chosen[-1] == "</s>" and chosen.count("</s>") == 1, chosen     # never "</s> </s>"
    n_steps = trace.n_steps
    translator.actions.step.trigger()
    idle(qtbot, translator)
    assert translator.session.trace.n_steps == n_steps
    assert any("end-of-sequence token </s>" in text for text in notices)


def test_the_translation_is_shown_as_text(qtbot, translator):
    for _ in range(25):
        translator.actions.step.trigger()
    idle(qtbot, translator)
    shown = translator.docks["tokens"].widget().translation
    assert shown.isVisibleTo(translator.docks["tokens"].widget())
    text = shown.document.toPlainText()
    assert "Source  March 14, 2024" in text.replace("\xa0", " ")
    assert "Target  2024年3月14日 (ended: </s>)" in text.replace("\xa0", " ")
