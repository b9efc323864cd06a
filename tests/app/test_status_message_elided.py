"""The status bar's notice is drawn whole where it fits, else elided with "…" at its room's end, the whole in its
tooltip: in the real window on a 1366x768 screen, the translator's "…the text ends here. Back, or click another
candidate to branch." at step 3 was cut mid-word by the fields on its right ("…Back, or click another c", issue 22).
Checked in pixels: the bar's notice is drawn as the font draws the text elided to the room Qt gives a notice (from
6 px to 2 px short of the first field shown)."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from PySide6.QtCore import QPoint, QRect, Qt
from PySide6.QtGui import QHelpEvent, QImage, QPainter
from PySide6.QtWidgets import QApplication, QToolTip

from tests.app.journey import BUNDLED, journey_in_a_window
from tests.app.screen_fit import SCREENS, settle

pytestmark = pytest.mark.usefixtures("store_home")   # the store in the test's folder


def pixels(image: QImage, rect: QRect) -> np.ndarray:
    image = image.convertToFormat(QImage.Format.Format_RGB32)
    rows = np.frombuffer(image.constBits(), np.uint8).reshape(image.height(), image.bytesPerLine())
    return rows[rect.top(): rect.bottom() + 1, 4 * rect.left(): 4 * (rect.right() + 1)].copy()


def drawn_as(status, text: str, rect: QRect) -> QImage:
    """`text` drawn in `rect` as QStatusBar draws a notice, on the bar's ground left of the notice."""
    actual = status.grab().toImage()
    image = QImage(actual.size(), QImage.Format.Format_RGB32)
    image.fill(actual.pixelColor(2, status.height() // 2))
    painter = QPainter(image)
    painter.setFont(status.font())
    painter.setPen(status.palette().windowText().color())
    painter.drawText(rect, int(Qt.AlignmentFlag.AlignLeading | Qt.AlignmentFlag.AlignVCenter
                                | Qt.TextFlag.TextSingleLine), text)
    painter.end()
    return image


def test_the_translators_end_of_text_notice_is_elided_whole_words_in_the_tooltip(qtbot, tmp_path, monkeypatch):
    with journey_in_a_window(qtbot, tmp_path, monkeypatch, SCREENS["1366x768"]) as journey:
        journey.open(BUNDLED / "translate-en-zh", "The brown fox")
        window = journey.window
        for _ in range(3):
            journey.act("Step", window.actions.step.trigger)
        eos = window.controller.summary.tokenizer.eos_id
        whole = window.controller.end_of_text(SimpleNamespace(steps=[SimpleNamespace(chosen_id=eos)]))
        journey.act("the model chose the end of the text", lambda: window.controller.notice.emit(whole))
        settle(0.2)
        status = window.status
        assert status.currentMessage() == whole
        first = min(field.x() for field in status.fields.values() if field.isVisible())
        room = QRect(6, 0, first - 2 - 6, status.height())
        metrics = status.fontMetrics()
        assert metrics.horizontalAdvance(whole) > room.width(), "the notice fits: nothing to check"
        expected = metrics.elidedText(whole, Qt.TextElideMode.ElideRight, room.width())
        assert expected.endswith("…") and len(expected) > 20, expected
        drawn = pixels(status.grab().toImage(), room)
        assert np.array_equal(drawn, pixels(drawn_as(status, expected, room), room)), \
            f"the notice is not drawn as {expected!r} in its {room.width()} px"
        QApplication.sendEvent(status, QHelpEvent(QHelpEvent.Type.ToolTip, room.center(),
                                                  status.mapToGlobal(room.center())))
        assert QToolTip.isVisible() and QToolTip.text() == whole, QToolTip.text()
        QToolTip.hideText()


def test_a_notice_that_fits_is_drawn_whole(qtbot, tmp_path, monkeypatch):
    with journey_in_a_window(qtbot, tmp_path, monkeypatch, SCREENS["1366x768"]) as journey:
        journey.open(BUNDLED / "translate-en-zh", "The brown fox")
        status = journey.window.status
        status.showMessage("Saved head.png (640×480 px)")
        settle(0.2)
        first = min(field.x() for field in status.fields.values() if field.isVisible())
        room = QRect(6, 0, first - 2 - 6, status.height())
        assert status.fontMetrics().horizontalAdvance(status.currentMessage()) <= room.width()
        drawn = pixels(status.grab().toImage(), room)
        assert np.array_equal(drawn, pixels(drawn_as(status, status.currentMessage(), room), room))
        QApplication.sendEvent(status, QHelpEvent(QHelpEvent.Type.ToolTip, QPoint(10, status.height() // 2),
                                                  status.mapToGlobal(QPoint(10, status.height() // 2))))
        assert not (QToolTip.isVisible() and QToolTip.text() == status.currentMessage())
