"""A window at its least width keeps its size through decoding steps (issue 22): the status bar sets that width,
and a step's italics and a time per step one digit longer or shorter changed it, so the window was grown to the
new least width and given its size back (GivenSize) twice a step, every dock laid out again each time."""
from __future__ import annotations

import dataclasses

from PySide6.QtCore import QEvent, QObject
from PySide6.QtWidgets import QApplication

from explorer.core.decode import Decoder
from tests.app.window_helpers import opened, step


class Resizes(QObject):
    """The sizes a widget is resized to."""

    def __init__(self, widget) -> None:
        super().__init__(widget)
        self.sizes: list[tuple] = []              # (old size, new size)
        widget.installEventFilter(self)

    def eventFilter(self, watched, event) -> bool:
        if event.type() == QEvent.Type.Resize:
            self.sizes.append((event.oldSize().toTuple(), event.size().toTuple()))
        return False


def test_a_window_at_its_least_width_keeps_its_size_through_decoding_steps(qtbot, window, tiny, monkeypatch):
    times = iter([1234.0, 87.0] + [1234.0, 5.0, 999.0, 87.0] * 2)    # ms per step: 4, 2, 4, 1, 3 and 2 digits
    run = Decoder._run
    monkeypatch.setattr(Decoder, "_run", lambda self, ids, kind: dataclasses.replace(
        run(self, ids, kind), ms=next(times) if kind == "decode" else 3.0))
    opened(qtbot, window, tiny, prompt="To be, or not to be, that is the question: whether to suffer the slings")
    for name, dock in window.docks.items():
        if name != "prompt":
            dock.close()                           # the prompt needs less width than the status bar
    step(qtbot, window)                            # the widest time, in the step's italics, shown once
    step(qtbot, window)                            # then a narrower one: the window's least width, for old code
    status = window.status
    # The status bar sets the window's least width here, not the app's floor (dock_layout.LEAST_WIDTH_PX, which is
    # wider than the bar at this font): its fields' widths must not resize a window held at their least.
    status.setMinimumWidth(0)
    # As narrow as the window may be, which the status bar sets (asked until it is: a resize lays the window out).
    least = status.layout().totalMinimumSize().width
    qtbot.waitUntil(lambda: window.resize(1, window.height()) or window.width() == window.minimumWidth() == least())
    width, fields = window.width(), status.fields
    resizes = Resizes(window)
    for n in range(8):
        step(qtbot, window)
        qtbot.waitUntil(lambda: fields["ms"].text().startswith(("1234 ", "5 ", "999 ", "87 ")[n % 4]))
        for _ in range(3):                         # GivenSize gives a size back from a zero-time timer
            QApplication.processEvents()
        assert resizes.sizes == [] and window.width() == width, f"step {n + 3}: {fields['ms'].text()}"
    assert not fields["step"].font().italic()
