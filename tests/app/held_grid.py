"""Whether the attention grid was held at each layout event of a widget: the probe of the tab-raise tests."""
from __future__ import annotations

from PySide6.QtCore import QEvent, QObject
from PySide6.QtWidgets import QWidget

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
