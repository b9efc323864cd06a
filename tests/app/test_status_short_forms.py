"""The status bar at the window's least size, with an error or a notice on its left (issue 22, drive21 m12): the
window asked 600x400 on a 1366x768 bare X screen is 799x701, and there, beside an error line, every field read cut:
"shak…", "MQA …", "cpu · …", "step …", "1.77 …". Each field in sight now draws a whole text (a shorter form, its whole
text its tooltip), the least important ones give up their place, and the step and the model stay in sight; regrown to
the screen's width, every field draws its whole text again.

Expectations: what the field paints (Field.drawn_text, the elided text where it does not fit) holds no "…"; its
text's width (the field's own QFontMetrics) is within the room inside the field; the field lies within the status
bar; the step field's numbers are the trace's step and token count; the window's width is the least the rest of the
window asks, at most 800 px (an 800 px screen).
"""
from __future__ import annotations

import re

import pytest
from PySide6.QtCore import QSize

from tests.app.journey import BUNDLED, journey_in_a_window
from tests.app.screen_fit import SCREENS, settle

pytestmark = pytest.mark.usefixtures("store_home")  # the store in the test's folder

PROMPT = "It was a dark and stormy night; the rain fell in torrents, except at occasional intervals."
ERROR = "/tmp/drive21-home has no config.json: a Hugging Face folder holds config.json beside its weights"


def cut_fields(status) -> list[str]:
    """Each field in sight that is cut, elided or outside the status bar, in words."""
    problems = []
    for name, field in status.fields.items():
        if not field.isVisible():
            continue
        drawn, room = field.drawn_text(), field.contentsRect().width()
        if "…" in drawn or field.fontMetrics().horizontalAdvance(drawn) > room:
            problems.append(f"{name} draws {drawn!r} in {room} px")
        if not status.rect().contains(field.geometry()):
            problems.append(f"{name} at {field.geometry().getRect()} is outside the bar {status.rect().getRect()}")
        if drawn != field.text() and not field.toolTip().startswith(field.text()):
            problems.append(f"{name} draws {drawn!r}; its whole text {field.text()!r} is not its tooltip")
    return problems


def check_step_and_model(window) -> None:
    fields, trace = window.status.fields, window.session.trace
    assert fields["step"].isVisible() and fields["model"].isVisible()
    numbers = [int(n.replace(",", "")) for n in re.findall(r"\d[\d,]*", fields["step"].drawn_text())]
    assert numbers[0] == trace.n_steps - 1 and numbers[-1] == trace.n_tokens, (fields["step"].drawn_text(), trace)
    assert fields["model"].drawn_text() in window.controller.summary.name


@pytest.mark.parametrize("model", ["shakespeare-mqa", "shakespeare-mla"])
def test_fields_are_whole_or_gone_at_the_least_size_beside_an_error_and_a_notice(qtbot, tmp_path, monkeypatch,
                                                                                 model):
    screen = SCREENS["1366x768"]
    with journey_in_a_window(qtbot, tmp_path, monkeypatch, screen) as journey:
        window, status = journey.window, journey.window.status
        journey.open(BUNDLED / model, PROMPT)
        for _ in range(3):
            journey.act("step", window.actions.step.trigger)
        least = window.minimumSizeHint()
        window.resize(least)        # not through act: the plots' least sizes are other tests' (test_layout_fit.py)
        settle()
        assert window.width() == least.width() <= 800, window.size()
        status.clearMessage()
        settle()
        assert not cut_fields(status), cut_fields(status)
        check_step_and_model(window)
        window.show_error(ERROR)        # not through act: its checks dismiss an error line, as a person does
        settle()
        assert status.error_line.isVisible()
        assert not cut_fields(status), f"beside the error: {cut_fields(status)}"
        check_step_and_model(window)
        assert window.minimumSizeHint().width() == least.width(), "the error changed the window's least width"
        status.error_line.clear()
        status.show_saved("Saved attention_L0_H0.png (640×480 px)")
        settle()
        assert not cut_fields(status), f"beside the notice: {cut_fields(status)}"
        check_step_and_model(window)
        window.resize(QSize(screen.width(), 700))
        status.clearMessage()
        settle()
        for name, field in status.fields.items():
            assert field.isVisible() and field.drawn_text() == field.text(), (name, field.drawn_text())
        assert not cut_fields(status)
