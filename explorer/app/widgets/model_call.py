"""Work that needs the loaded model itself (torch), run where the model is and reported on the GUI thread.

A panel never holds the model. It hands `job(loaded, progress, cancel)` to an
executor: by default `session.requests.model_job_requested`, which the
controller forwards to the model worker (`ModelWorker.run_job`), so the job runs
on the thread that owns the one loaded copy, after the decoding queued before it.
Tests and scripts may pass `thread_executor(loaded)` instead. The answers come
back through `ModelCall`'s signals, which Qt queues to the GUI thread.
"""
from __future__ import annotations

import threading
from typing import Callable

from PySide6.QtCore import QObject, Signal

from explorer.app.thread import threads
from explorer.app.thread.late_emit import emit_unless_deleted
from explorer.core.errors import ExplorerError

Progress = Callable[[float, str], None]
Job = Callable[[object, Progress, object], object]          # job(loaded, progress, cancel) -> result
Work = Callable[[object, Callable[[], bool]], None]          # work(loaded, cancelled)
Executor = Callable[[Work], None]


def thread_executor(loaded) -> Executor:
    """Run each work item on a daemon thread of its own with `loaded` (a test's or a script's model).
    Quitting stops it (threads.stop_all sets its cancel): one still in torch when the interpreter
    finalises aborts the process."""
    def execute(work: Work) -> None:
        stop = threading.Event()
        threads.start(lambda: work(loaded, stop.is_set), "model-call", stop=stop.set)
    return execute


class _Cancel:
    """Set by the person (Cancel) or by the worker (Stop, a new model): `convert` polls `is_set()`."""

    def __init__(self) -> None:
        self.event = threading.Event()
        self.by_worker: Callable[[], bool] = lambda: False

    def is_set(self) -> bool:
        return self.event.is_set() or self.by_worker()


class ModelCall(QObject):
    """One job at a time; `running` from `start` until `finished`, `failed` or `abandon`."""

    progress_changed = Signal(float, str)
    finished = Signal(object)
    failed = Signal(str)
    _answered = Signal(int, bool, object)        # (generation, ok, result or message), from any thread
    _progressed = Signal(int, float, str)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._cancel = _Cancel()
        self._running = False
        self._generation = 0
        self._answered.connect(self._on_answered)
        self._progressed.connect(self._on_progressed)

    @property
    def running(self) -> bool:
        return self._running

    def start(self, job: Job, executor: Executor) -> bool:
        if self._running:
            return False
        self._running = True
        self._generation += 1
        cancel = self._cancel = _Cancel()
        generation = self._generation
        def work(loaded, cancelled) -> None:
            self._run(job, loaded, cancelled, cancel, generation)
        work.what = getattr(job, "what", "")        # named for a run queued behind it (RequestQueue.jobs_ahead)
        executor(work)
        return True

    def cancel(self) -> None:
        self._cancel.event.set()

    def drop_work(self) -> None:
        """Another model or run came (base.Panel's one path): stop waiting, quietly."""
        self.abandon("")

    def abandon(self, message: str = "The job was cancelled before it ran.") -> None:
        """The job will never answer (the worker dropped it, or the model changed): stop waiting."""
        if self._running:
            self._cancel.event.set()
            self._generation += 1
            self._running = False
            self.failed.emit(message)

    # ----- where the model is ----------------------------------------------------------
    def _run(self, job: Job, loaded, cancelled, cancel: _Cancel, generation: int) -> None:
        cancel.by_worker = cancelled
        try:
            result = job(loaded, lambda fraction, what: self._progress(generation, fraction, what), cancel)
        except ExplorerError as error:
            self._answer(generation, False, str(error))
        except Exception as error:  # a bug must not kill the app: show it as one line
            self._answer(generation, False, f"The job failed: {type(error).__name__}: {error}")
        else:
            self._answer(generation, True, result)

    def _progress(self, generation: int, fraction: float, what: str) -> None:
        emit_unless_deleted(self, "_progressed", generation, float(fraction), str(what))

    def _answer(self, generation: int, ok: bool, value) -> None:
        emit_unless_deleted(self, "_answered", generation, ok, value)     # deleted while its job ran: nobody asks

    # ----- GUI thread --------------------------------------------------------------------
    def _on_progressed(self, generation: int, fraction: float, what: str) -> None:
        if generation == self._generation and self._running:
            self.progress_changed.emit(fraction, what)

    def _on_answered(self, generation: int, ok: bool, value) -> None:
        if generation != self._generation or not self._running:
            return                                   # an abandoned job's late answer
        self._running = False
        (self.finished if ok else self.failed).emit(value)
