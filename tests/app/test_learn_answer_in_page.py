"""Show the answer writes the answer under its question in the page, not under the buttons: there a four-line
answer grew the status line and pushed the questions out of the Learn column (1920x1080, where the column is
only the top row's height). Expectation: the page's text order (question, its answer, the next question) and the
status line's height against the font's line height, at the dock's width.
"""
from __future__ import annotations

from explorer.app.panels.learn import LearnPanel
from explorer.app.state.session import Session
from explorer.app.widgets.learn_tour import load_stops
from explorer.app.window.learn_placement import DOCK_PX

STOPS = load_stops()


def test_the_answer_stands_under_its_question_and_the_status_stays_one_line(qtbot):
    index = next(i for i, s in enumerate(STOPS) if s.id == "decoding")
    stop = STOPS[index]
    question = next(i for i, t in enumerate(stop.tries) if t.answer == "text")
    panel = LearnPanel(Session(), stops=STOPS)
    qtbot.addWidget(panel)
    panel.resize(DOCK_PX, 600)
    panel.show()
    panel.go_to(index)
    browser_height = panel.text.height()
    panel.show_answer(question)
    qtbot.waitUntil(lambda: panel.status.height() > 0)
    text = panel.text.toPlainText()
    asked, answered = text.find(stop.tries[question].question[:40]), text.find(stop.tries[question].text[:40])
    assert 0 <= asked < answered, "the answer is not under its question in the page"
    if question + 1 < len(stop.tries):
        assert answered < text.find(stop.tries[question + 1].question[:40])
    lines = panel.status.height() / panel.status.fontMetrics().lineSpacing()
    assert lines < 2.5, f"the status line grew to {lines:.1f} lines"
    assert panel.text.height() >= browser_height - panel.status.fontMetrics().lineSpacing(), "the page shrank"
    panel.go_to(index + 1)
    assert stop.tries[question].text[:40] not in panel.text.toPlainText()
