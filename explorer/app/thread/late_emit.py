"""A worker thread's answer to a GUI object that may be gone by the time the work ends.

A background job (a grid filling, a model job) reports on a signal of the QObject that started it; Qt
queues the emission to the GUI thread. When the app closes while the job runs, that object is deleted
under it, and emitting raises RuntimeError ("Signal source has been deleted") in the worker thread, which
printed a traceback at exit. Nobody is left to answer, so the answer is dropped, and the worker is told,
so it can stop early.
"""
from __future__ import annotations

from PySide6.QtCore import QObject


def emit_unless_deleted(owner: QObject, signal: str, *args) -> bool:
    """`owner.<signal>.emit(*args)`; False, with nothing emitted, when `owner` was deleted meanwhile.

    Asking shiboken6.isValid first would race with the deletion on the GUI thread; the emission itself is
    the test."""
    try:
        getattr(owner, signal).emit(*args)
    except RuntimeError:
        return False
    return True
