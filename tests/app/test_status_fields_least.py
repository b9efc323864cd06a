"""The status bar's fields at the window's least size (issue 22): each field in sight draws a whole text, its own
or a shorter form whose whole text is its tooltip, never one cut with "…". At 760 px the seven fields asked 849 px
and each was cut to 46 px: "shake…", "step …". (A notice or an error on the left takes their room while it is up.)

Expectations are widths measured with the field's own QFontMetrics against the room inside the field, and what the
trace says (its step and its token count), in the real window on an emulated screen (tests/app/screen_fit.py).
"""
from __future__ import annotations

import re

import pytest

from tests.app.journey import BUNDLED, journey_in_a_window
from tests.app.screen_fit import SCREENS

pytestmark = pytest.mark.usefixtures("store_home")  # the store in the test's folder

PROMPT = "When Mary and John went to the store, John gave a drink to"


def drawn(field) -> str:
    """What the field draws: its text, or the shorter form it draws where the text does not fit."""
    return field.drawn_text() if hasattr(field, "drawn_text") else field.text()


def whole(field) -> bool:
    return field.fontMetrics().horizontalAdvance(drawn(field)) <= field.contentsRect().width()


def check_model_and_step(window) -> None:
    fields, trace = window.status.fields, window.session.trace
    assert drawn(fields["model"]) == window.controller.summary.name and whole(fields["model"]), \
        f"the model's field draws {drawn(fields['model'])!r} in {fields['model'].contentsRect().width()} px"
    step = drawn(fields["step"])
    assert whole(fields["step"]), f"the step's field cuts {step!r} in {fields['step'].contentsRect().width()} px"
    numbers = [int(n.replace(",", "")) for n in re.findall(r"\d[\d,]*", step)]
    assert numbers[0] == trace.n_steps - 1 and numbers[-1] == trace.n_tokens, (step, trace.n_steps, trace.n_tokens)


@pytest.mark.parametrize("model", ["shakespeare-gqa", "shakespeare-mla", "translate-en-zh"])
def test_every_field_is_whole_at_the_windows_least_size(qtbot, tmp_path, monkeypatch, model):
    screen = SCREENS["1366x768"]
    with journey_in_a_window(qtbot, tmp_path, monkeypatch, screen) as journey:
        window = journey.window
        journey.open(BUNDLED / model, PROMPT)
        journey.act("step", window.actions.step.trigger)
        least = window.minimumSizeHint()
        journey.act(f"resized to {least.width()}x{least.height()}", lambda: window.resize(least))
        status = window.status
        journey.act("notice gone", status.clearMessage)
        assert window.width() == least.width()
        for name, field in status.fields.items():
            if field.isVisible():
                assert whole(field), f"{name}: {drawn(field)!r} is cut in {field.contentsRect().width()} px"
                assert drawn(field) == field.text() or field.toolTip().startswith(field.text()), \
                    f"{name} draws {drawn(field)!r}; its whole text {field.text()!r} is not its tooltip"
        check_model_and_step(window)
