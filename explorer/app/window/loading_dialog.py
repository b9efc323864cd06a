"""The Loading dialog: a model load's bar, its words and its Cancel, for as long as the load lasts.

A load reports on the model thread's `progress` (ModelWorker), and nothing else does: a prefill or a replay reports
its layers on `run_progress` (run/run_progress.py), a panel's job on its own call. The loaders fill the bar up to
READY_AT as they read the files, and the runtime names what is left, making the model, at READY_AT
(core/loaders/load_progress.py): the bar is never full while the load lasts, and the load's end closes the dialog.
"""
from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QWidget

from explorer.app.widgets.dialog_focus import close_returning_focus
from explorer.app.widgets.steady_progress import SteadyProgress


class LoadingDialog:
    """Opens the dialog over `window` as a load starts (`follow`), moves its bar (`show_progress`), and closes
    it as the load ends; its Cancel calls `cancel`. `dialog` is the one open, or None."""

    def __init__(self, window: QWidget, cancel: Callable[[], None]) -> None:
        self._window, self._cancel = window, cancel
        self.dialog: SteadyProgress | None = None

    def follow(self, loading: bool, shown_after_ms: int) -> bool:
        """Open the dialog as a load starts (shown once the load has lasted `shown_after_ms`), close it as the load
        ends; True when a dialog was closed."""
        if loading:
            self.dialog = SteadyProgress("Loading the model…", 0, self._window, "Loading")   # Cancel stays put
            self.dialog.setWindowModality(Qt.WindowModality.NonModal)   # the window stays usable
            self.dialog.setMinimumDuration(shown_after_ms)
            # Not hidden at its maximum (SteadyProgress): the loader's last tensor is not the end of the load (the
            # model is made, a float32 copy written), and a dialog gone then left the load running with no Cancel.
            self.dialog.canceled.connect(self._cancel)
            return False
        if self.dialog is None:
            return False
        self.dialog.canceled.disconnect(self._cancel)
        close_returning_focus(self.dialog)
        self.dialog.deleteLater()
        self.dialog = None
        return True

    def show_now(self) -> None:
        """Show the dialog at once, not after its minimum duration: the load's next call holds the window."""
        if self.dialog is not None and not self.dialog.isVisible():
            self.dialog.show()

    def show_progress(self, fraction: float, message: str) -> None:
        """The load's share done (negative: unknown, the bar keeps its place) and what it does now."""
        if self.dialog is None:
            return
        if fraction >= 0:
            self.dialog.setMaximum(100)
            self.dialog.setValue(int(100 * min(1.0, fraction)))     # shown here once shown_after_ms passed
        if message:
            self.dialog.setLabelText(message)
