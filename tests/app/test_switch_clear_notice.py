"""A switch that clears the experiments says so where it can be read (drive 22).

Gemma 3 with L1.H1 Alt-click ablated, then MiniLM opened: the ablation went, and the Experiments dock said nothing
of it (its "not a decoder-only model" sentence took the place of the notice); SmolLM2 → the translator the same.
SmolLM2 → shakespeare-mla said it in the status bar, clipped at 1366 px: "… SmolLM2-135M-Instruct.Q4_1 were
clearec". Expectation: after a switch to an encoder, an encoder–decoder or a decoder, the Experiments dock's
visible text says the experiments on the model before were cleared, naming it, and the status bar's notice is
drawn whole: its text's width in the bar's font within the rect QStatusBar draws a message in (qstatusbar.cpp
messageRect: from x 6 to 2 px left of the first permanent widget shown), which clips and never elides.
"""
from __future__ import annotations

import pytest
from PySide6.QtCore import QSize
from PySide6.QtGui import QFontMetrics
from PySide6.QtWidgets import QWidget

from explorer.core.intervention import HeadAblation, Intervention
from tests.app.journey import BUNDLED, _text_of, journey_in_a_window
from tests.app.screen_fit import SCREENS

pytestmark = pytest.mark.usefixtures("store_home")   # the store in the test's folder

PROMPT = "To be, or not to be, that is the question"
ABLATE = Intervention(ablations=(HeadAblation(1, 1, "zero"),))


@pytest.fixture(scope="module")
def minilm():
    """The pulled MiniLM (found before a test's own empty store replaces the run's)."""
    from explorer.core import store

    return store.pulled_path("minilm-l6")


def message_room(status) -> int:
    """The width QStatusBar draws its message in: from x 6 to 2 px left of the first permanent widget shown."""
    right = status.width() - 12
    shown = [field.x() for field in status.fields.values() if field.isVisible()]
    if shown:
        right = min(right, min(shown) - 2)
    return right - 6


def panel_texts(panel: QWidget) -> list[str]:
    return [text for child in panel.findChildren(QWidget) if child.isVisible() and (text := _text_of(child))]


def switch_and_check(journey, folder, prompt: str) -> None:
    """Ablate L1.H1 on shakespeare-gqa, open `folder`: the dock and the notice say the experiments were cleared."""
    window = journey.window
    panel = journey.raise_panel("experiments")
    journey.open(BUNDLED / "shakespeare-gqa", PROMPT)
    journey.act("ablating L1.H1", lambda: window.session.add_experiment(ABLATE))
    said = []
    window.status.messageChanged.connect(lambda text: text and said.append(text))
    journey.open(folder, prompt)
    name = window.session.model.name
    assert window.session.experiments == ()
    texts = panel_texts(journey.raise_panel("experiments"))
    assert panel.isVisible() and any("experiments on shakespeare-gqa were cleared" in t for t in texts), texts
    notices = [text for text in said if "cleared" in text]
    assert len(notices) == 1 and name in notices[0], said
    status = window.status
    assert status.currentMessage() == notices[0], (status.currentMessage(), said)
    drawn = QFontMetrics(status.font()).horizontalAdvance(notices[0])
    assert drawn <= message_room(status), f"{notices[0]!r}: {drawn} px in {message_room(status)} px"


@pytest.mark.parametrize("screen", list(SCREENS.values()), ids=list(SCREENS))
def test_a_switch_to_the_translator_says_the_experiments_were_cleared(qtbot, tmp_path, monkeypatch, screen):
    with journey_in_a_window(qtbot, tmp_path, monkeypatch, screen) as journey:
        switch_and_check(journey, BUNDLED / "translate-en-zh", "The capital of France is Paris.")


def test_a_switch_to_an_encoder_says_the_experiments_were_cleared(qtbot, tmp_path, monkeypatch, minilm):
    if minilm is None:
        pytest.fail("minilm-l6 is not pulled: `make test` pulls it")
    with journey_in_a_window(qtbot, tmp_path, monkeypatch, QSize(1366, 768)) as journey:
        switch_and_check(journey, minilm, "The capital of France is Paris.")


def test_a_switch_to_a_decoder_says_it_whole_at_the_least_common_screen(qtbot, tmp_path, monkeypatch):
    with journey_in_a_window(qtbot, tmp_path, monkeypatch, QSize(1366, 768)) as journey:
        switch_and_check(journey, BUNDLED / "shakespeare-mla", PROMPT)
