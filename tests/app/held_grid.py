"""Whether the attention grid was held at each layout event of a widget: the probe of the tab-raise tests, and
their settle(), which lets the window's events and turns run."""
from __future__ import annotations

import time

from PySide6.QtCore import QEvent, QObject
from PySide6.QtWidgets import QApplication, QWidget

from explorer.app.widgets.grid_filler import GridFiller


class HeldAt(QObject):
    """Whether `grid` was held at each event of `kinds` (Move and Resize unless named) the watched widget had."""

    def __init__(self, watched: QWidget, grid: GridFiller,
                 kinds: tuple[QEvent.Type, ...] = (QEvent.Type.Move, QEvent.Type.Resize)) -> None:
        super().__init__(watched)
        self.grid, self.kinds, self.held = grid, kinds, []
        watched.installEventFilter(self)

    def eventFilter(self, watched, event) -> bool:
        if event.type() in self.kinds:
            self.held.append(self.grid.held())
        return False


SETTLE_S = 0.3


def settle(seconds: float = SETTLE_S) -> None:
    """Run the window's events for `seconds`, as an idle person's window would."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        QApplication.processEvents()
        time.sleep(0.01)
