"""View ▸ Presentation: for a projector in a classroom, larger text and one panel, the one in focus,
over the whole window; off again, the text and the layout as they were.

A projector is often 1366×768 and read from the back of the room: the application's font grows by
FONT_SCALE, and the other panels are hidden (dock_shares' maximise) so that the one shown keeps plots
large enough to read at that size.
"""
from __future__ import annotations

from PySide6.QtGui import QFont
from PySide6.QtWidgets import QApplication

from explorer.app.window import dock_layout
from explorer.app.window.dock_shares import focused_dock

FONT_SCALE = 1.4


def scaled(font: QFont, scale: float) -> QFont:
    """`font` `scale` times larger, whether it is sized in points or in pixels."""
    bigger = QFont(font)
    if font.pointSizeF() > 0:
        bigger.setPointSizeF(font.pointSizeF() * scale)
    else:
        bigger.setPixelSize(round(font.pixelSize() * scale))
    return bigger


class Presentation:
    def __init__(self, window) -> None:
        self.window = window
        self.font_before: QFont | None = None

    @property
    def on(self) -> bool:
        return self.font_before is not None

    def set_on(self, on: bool) -> None:
        if on == self.on:
            return
        app, shares = QApplication.instance(), self.window.dock_shares
        if on:
            self.font_before = QFont(app.font())
            app.setFont(scaled(self.font_before, FONT_SCALE))
            if shares.maximised is None:
                shares.toggle_maximised(focused_dock(self.window))
        else:
            app.setFont(self.font_before)
            self.font_before = None
            if shares.maximised is not None:
                shares.toggle_maximised(shares.maximised[0])
        dock_layout.keep_on_screen(self.window)
