"""The model thread, started before anything else of the app, so that torch's import (about 2 s on
a 2-core laptop, most of a cold start) begins at once rather than after Qt's and numpy's.

`start()` (the command line calls it before it imports the app) begins importing the core in a
thread named model-worker. The ModelWorker made later hands that thread its request loop
(`adopt`) instead of starting a thread of its own, so torch is imported by one thread only (two
threads importing torch at once break its import).
"""
from __future__ import annotations

import gc
import queue
import threading

_lock = threading.Lock()
_started: threading.Thread | None = None
_loop_box: queue.Queue | None = None


def start() -> None:
    """Start the model thread importing the core; once per process."""
    global _started, _loop_box
    with _lock:
        if _started is not None:
            return
        box: queue.Queue = queue.Queue(maxsize=1)

        def run() -> None:
            try:
                import explorer.core.runtime  # noqa: F401  (imports torch)
            except Exception:       # noqa: BLE001 - the loop reports it when it first needs the core
                pass
            # What the imports made (torch's, Qt's, numpy's: ~220,000 objects, never garbage) is kept out of
            # every later full collection: gc_guard's, on the GUI thread every 30 s, took 130-190 ms with them,
            # a freeze of the window. Done before any model is made, whose objects must stay collectable.
            gc.freeze()
            box.get()()             # the worker's loop, handed over by `adopt`

        _started, _loop_box = threading.Thread(target=run, name="model-worker", daemon=True), box
        _started.start()


def adopt(run_forever) -> threading.Thread | None:
    """Give the started thread `run_forever` to run once the core is imported; the thread, or None
    where none was started (or another worker took it)."""
    global _loop_box
    with _lock:
        box, _loop_box = _loop_box, None
    if box is None:
        return None
    box.put(run_forever)
    return _started
