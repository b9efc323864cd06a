"""A frame of Record the Window While Stepping is the window once drawing it changes it no more (the CI run of
5ac778f: a frame grabbed at step 0 differed from the window settled at step 0 in 14 pixels of the Attention panel).

pyqtgraph sizes an axis as it paints its labels; the view is laid out again for it only in a later pass of the
event loop, so a grab that is the window's first paint since a change shows the layout before the change. The
widget below does the same in miniature: a paint that finds its text changed asks, for the next pass, that the
text be shown. A frame grabbed then must show the text, as the window does once the event loop ran a while.
"""
from __future__ import annotations

import time

from PySide6.QtCore import QTimer
from PySide6.QtGui import QPainter
from PySide6.QtWidgets import QApplication, QWidget

from explorer.app.figures import window_animation


class SizedAsPainted(QWidget):
    """Draws `shown`; a paint that finds `text` newer makes it shown in the next pass of the event loop."""

    def __init__(self) -> None:
        super().__init__()
        self.text = self.shown = "step 1"
        self.resize(240, 60)

    def paintEvent(self, _event) -> None:
        with QPainter(self) as painter:
            painter.fillRect(self.rect(), self.palette().window())
            painter.drawText(10, 30, self.shown)
        if self.shown != self.text:
            QTimer.singleShot(0, self, self._catch_up)

    def _catch_up(self) -> None:
        self.shown = self.text
        self.update()


def run_loop(seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        QApplication.processEvents()
        time.sleep(0.01)


def test_a_frame_is_the_window_once_a_paint_changes_it_no_more(qapp):
    widget = SizedAsPainted()
    widget.show()
    run_loop(0.2)
    first_paint = widget.grab().toImage()                # the text before the change
    widget.text = "step 0 (prefill)"                     # no update asked: the grab is the first paint since
    frame = window_animation.steady_grab(widget)
    run_loop(0.3)
    settled = widget.grab().toImage()
    assert settled != first_paint                        # the change shows once the event loop ran
    assert frame == settled


def test_something_that_never_stops_changing_still_gives_a_frame(qapp):
    widget = SizedAsPainted()
    widget.show()
    run_loop(0.1)
    count = iter(range(1000))

    def changing() -> None:
        widget.text = f"frame {next(count)}"
        widget.update()
    timer = QTimer(widget, interval=0, timeout=changing)
    timer.start()
    started = time.monotonic()
    frame = window_animation.steady_grab(widget)
    timer.stop()
    assert not frame.isNull()
    assert time.monotonic() - started < window_animation.SETTLE_S
