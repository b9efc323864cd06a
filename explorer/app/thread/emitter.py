"""The model thread's signals: what it hands back (traces, answers, progress, failures), each queued by Qt to the
GUI thread (see worker.ModelWorker)."""
from __future__ import annotations

from PySide6.QtCore import QObject, Signal


class Emitter(QObject):
    """Signals emitted from the worker thread; Qt queues them to the GUI thread."""

    trace_ready = Signal(object, int)   # the trace, and the seq of the request that made it
    model_loaded = Signal(object)
    lens_ready = Signal(object)
    candidates_ready = Signal(object)
    failed = Signal(str)
    load_failed = Signal(str)
    notice = Signal(str)
    progress = Signal(float, str)
    pausing = Signal(float, str, object)    # a load's Pause (load_progress), and the Event set once it is shown
    run_progress = Signal(float, str)   # a prefill's (or a replay's) layers done, and what runs
    devices_found = Signal(object)
    state_changed = Signal(int)     # RequestQueue.finish's answer: the push count once idle, else -1
    jobs_changed = Signal(object)   # RequestQueue.jobs as a request starts: what runs, and the jobs that wait
