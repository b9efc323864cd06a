"""The model bar's box shows a label too long for it whole or elided with an ellipsis, in the real window at
1366 x 768."""
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
