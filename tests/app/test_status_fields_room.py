"""The status bar's fields are drawn whole wherever Qt's own status bar would lay the same texts out unsqueezed:
the room they may take is read from where QStatusBar laid them out, not estimated from the bar's width, its size
grip and Qt's spacings restated as constants (issue 22: the estimate shrank the fields 5 px early). The reference
is the least width of a main window at which Qt's own QStatusBar gives labels of the same texts, each asking its
text's advance and margins, all the width they ask."""
from __future__ import annotations

from PySide6.QtCore import QSize
from PySide6.QtWidgets import QLabel, QMainWindow, QStatusBar

from explorer.app.window.status_bar import StatusLine
from tests.app.screen_fit import settle

TEXTS = dict(model="shakespeare-gqa", params="2.56M params", attention="GQA 6 Q → 2 KV heads",
             device="cpu · float32", step="step 3 of 4 · 22 tokens", ms="278 ms/step", memory="trace 93 KiB")


def main_window(qtbot, bar: QStatusBar) -> QMainWindow:
    window = QMainWindow()
    window.setStatusBar(bar)
    qtbot.addWidget(window)
    window.resize(1000, 200)
    window.show()
    qtbot.waitExposed(window)
    return window


class TextLabel(QLabel):
    """A label asking its text's advance and its 6 px margins each side, as a field does, and squeezed below
    that where the bar is short of room."""

    def sizeHint(self) -> QSize:
        return QSize(self.fontMetrics().horizontalAdvance(self.text()) + 12, super().sizeHint().height())

    def minimumSizeHint(self) -> QSize:
        return QSize(0, super().minimumSizeHint().height())


def qt_has_room(window: QMainWindow, labels: list[QLabel], width: int) -> bool:
    """Whether Qt's own status bar, in a main window `width` px wide, gives every label the width it asks."""
    window.resize(width, 200)
    settle(0.02)
    assert window.width() == width, (window.width(), width)
    return all(label.width() >= label.sizeHint().width() for label in labels)


def test_the_fields_are_whole_wherever_qts_status_bar_has_room_for_them(qtbot):
    line = StatusLine()
    window = main_window(qtbot, line)
    line._set(**TEXTS)
    bar, labels = QStatusBar(), [TextLabel(TEXTS[name]) for name in StatusLine.FIELDS]
    for label in labels:
        label.setContentsMargins(6, 0, 6, 0)
        bar.addPermanentWidget(label)
    reference = main_window(qtbot, bar)
    least = next(width for width in range(600, 1200) if qt_has_room(reference, labels, width))
    for width in range(least - 6, least + 6):
        window.resize(width, 200)
        settle(0.02)
        assert window.width() == width, (window.width(), width)
        forms = {name: field.form for name, field in line.fields.items()}
        assert (set(forms.values()) == {0}) == (width >= least), \
            f"at {width} px (Qt has room for the whole texts from {least}) the status bar draws forms {forms}"
        for name, field in line.fields.items():
            if field.isVisible():
                drawn = field.forms[min(field.form, len(field.forms) - 1)]
                assert field.contentsRect().width() >= field.fontMetrics().horizontalAdvance(drawn), \
                    f"at {width} px {name} draws {drawn!r} in {field.contentsRect().width()} px"
