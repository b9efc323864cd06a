"""What driving the app on bare X screens found in its labels, each checked in the real window at 1366 x 768."""
from __future__ import annotations


def test_the_model_box_shows_its_label_whole_or_elided_with_an_ellipsis_at_1366(qtbot, tmp_path, monkeypatch):
    """"smollm2-135m · Instruct, Q4_1  (pulled)" was cut mid-word to "smollm2-135m · Instruct, Q4_1  (": the
    box is 22 characters wide and is not widened (that would push the sampling controls into the overflow)."""
    from PySide6.QtCore import QSize
    from PySide6.QtWidgets import QStyle, QStyleOptionComboBox

    from tests.app.journey import BUNDLED, journey_in_a_window

    label = "smollm2-135m · Instruct, Q4_1  (pulled)"
    with journey_in_a_window(qtbot, tmp_path, monkeypatch, QSize(1366, 768)) as journey:
        journey.open(BUNDLED / "shakespeare-gqa", "To be, or not to be")
        box = journey.window.model_bar.models
        box.setItemText(box.currentIndex(), label)
        option = QStyleOptionComboBox()
        box.initStyleOption(option)
        field = box.style().subControlRect(QStyle.ComplexControl.CC_ComboBox, option,
                                           QStyle.SubControl.SC_ComboBoxEditField, box)
        metrics = box.fontMetrics()
        assert metrics.horizontalAdvance(label) > field.width(), "the label fits: nothing to check"
        shown = option.currentText
        assert metrics.horizontalAdvance(shown) <= field.width(), f"{shown!r} is cut at {field.width()} px"
        head, ellipsis, tail = shown.partition("…")
        assert ellipsis and label.startswith(head) and label.endswith(tail), shown
        assert head.startswith("smollm2") and tail.endswith("(pulled)"), shown
        assert not box.grab().isNull()                              # the box paints that text


def test_the_grid_progress_reads_whole_beside_learn_at_1366(qtbot, tmp_path, monkeypatch):
    """Learn open at 1366 x 768: the all-heads grid's progress read "step 0: compu"."""
    from PySide6.QtCore import QSize

    from explorer.app.panels.learn import open_learn
    from tests.app.journey import BUNDLED, journey_in_a_window

    with journey_in_a_window(qtbot, tmp_path, monkeypatch, QSize(1366, 768)) as journey:
        journey.open(BUNDLED / "shakespeare-gqa", "To be, or not to be, that is the question:")
        journey.act("Learn opened", lambda: open_learn(journey.window))
        attention = journey.raise_panel("attention")
        progress = attention.grid_progress
        progress.show()
        progress.filler.step = 12
        progress._show(120, 270)
        journey.idle("the grid's progress")
        label = progress.label
        shown = label.shown() if hasattr(label, "shown") else label.text()     # the words drawn
        assert label.fontMetrics().horizontalAdvance(shown) <= label.contentsRect().width(), (
            f"{shown!r} is cut at {label.contentsRect().width()} px")
        assert shown.startswith("step 12") and shown.endswith("120 / 270"), shown    # the step and counts whole
        head, ellipsis, tail = shown.partition("…")
        assert label.text().startswith(head) and label.text().endswith(tail), (shown, label.text())
        assert not label.grab().isNull(), shown


def test_back_to_my_session_with_no_model_of_ones_own_says_the_tours_model_stays(qtbot, tmp_path, monkeypatch):
    """Launched with no model, a Learn stop shown, then "Back to my session": it said "Your own model and prompt
    are back." over the tour's model and trace, the prompt emptied under them (every panel "out of date")."""
    from PySide6.QtCore import QSize

    from explorer.app.panels.learn import open_learn
    from explorer.app.window.model_refs import short_name
    from tests.app.journey import journey_in_a_window

    with journey_in_a_window(qtbot, tmp_path, monkeypatch, QSize(1366, 768)) as journey:
        window = journey.window
        assert window.controller.reference is None and window.prompt.text == ""
        panel = open_learn(window)
        panel.go_to(len(panel.stops) - 1)                       # a late stop
        with qtbot.waitSignal(panel.ensure_tour().reached, timeout=180_000):
            panel.show_button.click()
        tour_prompt = window.prompt.text
        journey.act("back to my session", panel.own_button.click)
        journey.idle("back")
        said = panel.status.text()
        if window.controller.reference is None:                  # truly back where it started
            assert window.session.trace is None, said
        else:
            assert short_name(window.controller.reference) in said, said
            assert "stay" in said and "are back." not in said.split(":")[0], said
            assert window.prompt.text == tour_prompt and not window.session.out_of_date, (
                window.prompt.text, said)
