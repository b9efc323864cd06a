"""The progress of a long prefill (or of a session replayed from its file): a bar per layer and Cancel.

The model thread reports each layer of the prompt's forward pass (ModelWorker.run_progress). A
prefill of a few hundred tokens ends before the dialog's minimum duration, so only the long
ones (a pasted chapter: seconds per layer) show it. Cancel stops the pass at the next layer.
"""
from __future__ import annotations

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtWidgets import QWidget

from explorer.app.widgets.dialog_focus import close_returning_focus
from explorer.app.widgets.steady_progress import SteadyProgress

SHOWN_AFTER_MS = 600
STEPS = 1000


class RunProgress(QObject):
    """Follows `worker.run_progress` with a non-modal progress dialog over `parent`; closed once the run's
    trace arrives (other jobs may keep the worker busy long after: the dialog must not stand at 100 %
    meanwhile), or when the worker is idle (a run that failed). A run asked while a panel's job holds the model
    thread (the head atlas scoring) opens it at once on what it waits for (`run_waiting`), at 0 %, until its
    first layer. Cancel asks `cancel_requested`."""

    cancel_requested = Signal()

    def __init__(self, worker, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.worker = worker
        self._parent = parent
        self.dialog: SteadyProgress | None = None
        self.cancelled = False
        worker.run_progress.connect(self._on_progress)
        worker.run_waiting.connect(lambda text: self._on_progress(0.0, text))
        worker.busy_changed.connect(lambda busy: None if busy else self.close())
        worker.trace_ready.connect(lambda _trace: self.close())

    def _on_progress(self, fraction: float, text: str) -> None:
        if self.dialog is None:
            self.cancelled = False
            self.dialog = SteadyProgress(text, STEPS, self._parent, "Running the prompt")
            self.dialog.setWindowModality(Qt.WindowModality.NonModal)     # the window stays usable
            self.dialog.setMinimumDuration(SHOWN_AFTER_MS)
            self.dialog.canceled.connect(self._cancel)
        self.dialog.setLabelText(text)
        self.dialog.setValue(round(STEPS * min(1.0, max(0.0, fraction))))

    def _cancel(self) -> None:
        self.cancelled = True
        self.close()
        self.cancel_requested.emit()

    def close(self) -> None:
        if self.dialog is not None:
            self.dialog.canceled.disconnect(self._cancel)
            close_returning_focus(self.dialog)
            self.dialog.deleteLater()
            self.dialog = None
