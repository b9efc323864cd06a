"""Whether the model thread is running a request a person made (Run, Step, Back, a replay, a model): the views'
background threads (the all-heads grid's, and widgets.grid_filler's Background jobs: the large map's block maxima,
a derivation's cell, an export) start no block of rows meanwhile.

They compete with the model for Python's lock: a 2-token Run right after a 3,871-token one took 2.06 s in the model
(62 ms alone), while the long trace's grid still filled on its two threads and each of the step's ~120 torch calls
waited behind them (drive26). A panel's own model job (an atlas, an attribution) holds nothing: the grid fills
beside it as before.
"""
from __future__ import annotations

import threading
from contextlib import contextmanager

_running = threading.Event()


def running() -> bool:
    """Whether a person's request runs on the model thread now (read from any thread)."""
    return _running.is_set()


@contextmanager
def running_one(person: bool):
    """While inside, `running()` is true where the request is a person's (`person`)."""
    if not person:
        yield
        return
    _running.set()
    try:
        yield
    finally:
        _running.clear()
