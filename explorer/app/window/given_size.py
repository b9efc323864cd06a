"""The size a window was given, kept when its layout's minimum grows for a moment.

Qt makes a top-level window at least as large as its layout's minimum: when a dock's minimum grows (a
panel's wrapped text during a model switch, a panel in its working state), `setMinimumSize` resizes the
window. With a window manager the person can make it smaller again; on a bare X screen (no window
manager) nothing ever does, and the window kept every pixel it had once grown by (736 px became 758
over a round of model switches). So the size last given to the window (by the app's own fit, a restored
geometry, or the person through a window manager) is remembered, a growth to the minimum is not
taken for a new one, and once the minimum allows, the window goes back to the size it was given.
"""
from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, QSize, QTimer
from PySide6.QtWidgets import QWidget

from explorer.app.window import dock_layout


def grown_to_minimum(old: QSize, new: QSize, minimum: QSize) -> bool:
    """Whether a resize from `old` to `new` is Qt growing the window to its minimum (it then has exactly
    the minimum in the dimension that grew); a person or a window manager makes it some other size."""
    taller = new.height() > old.height() and new.height() == minimum.height()
    wider = new.width() > old.width() and new.width() == minimum.width()
    return old.isValid() and (taller or wider)


class GivenSize(QObject):
    """Watches `window`'s resizes and layout requests, and gives it back the size it was given."""

    def __init__(self, window: QWidget) -> None:
        super().__init__(window)
        self.window = window
        self.given: QSize | None = None
        self._pending = False
        self._giving_back = False
        window.installEventFilter(self)

    def eventFilter(self, watched, event) -> bool:
        if watched is self.window:
            kind = event.type()
            if kind == QEvent.Type.Resize:
                if grown_to_minimum(event.oldSize(), event.size(), self.window.minimumSize()):
                    self._give_back_later()
                elif not self._giving_back:        # part of the way back is not a new size given
                    self.given = QSize(event.size()).boundedTo(self._screen())
            elif kind == QEvent.Type.LayoutRequest and self._grown():
                self._give_back_later()      # the layout's minimum may fall once this request is handled
        return False

    def _screen(self) -> QSize:
        """The screen's available size less the window's frame: no size given is larger. A resize asked while the
        layout's minimum was taller than the screen is made at the minimum instead (shrunk to 800 x 600 with the
        translator open, the window was 866 px tall; asked 1366 x 738 on a 1366x768 screen, it stayed 866), and
        the size asked is lost. Before the window is shown its frame is unknown and frame_size guesses a title
        bar, which a bare X screen never draws: a restored 1920x1080 was recorded as given 1920x1048, and given
        back once shown, over a 32 px black strip. A window manager that adds a frame resizes the window once
        shown, and that size is the one given."""
        frame = dock_layout.frame_size(self.window) if self.window.isVisible() else QSize(0, 0)
        return dock_layout.available_geometry(self.window).size() - frame

    def _grown(self) -> bool:
        size = self.window.size()
        return self.given is not None and (size.width() > self.given.width() or size.height() > self.given.height())

    def _give_back_later(self) -> None:
        if not self._pending:
            self._pending = True
            QTimer.singleShot(0, self, self.give_back)

    def give_back(self) -> None:
        """The size given, or as near as the layout's minimum allows now (not when full screen)."""
        self._pending = False
        if not self._grown() or self.window.isFullScreen():
            return
        target = self.window.size().boundedTo(self.given).expandedTo(self.window.minimumSize())
        if target != self.window.size():
            self._giving_back = True
            try:
                self.window.resize(target)
            finally:
                self._giving_back = False
