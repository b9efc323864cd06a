"""Python's cyclic garbage collector runs on whichever thread happens to allocate.

When it runs on the model thread and frees a Qt object left over from the GUI, PySide's
destructor waits for the GIL while holding a Qt lock that the GUI thread is waiting on: a
deadlock (seen while loading a model). So automatic collection is switched off and the GUI
thread collects on a timer instead, and lets go of what the app's finished threads ran (threads.release_finished),
whose last reference must not drop on those threads either.
"""
from __future__ import annotations

import gc

from PySide6.QtCore import QObject, QTimer

from explorer.app.thread import threads

YOUNG_EVERY_MS = 1000        # the young generations: cheap, often
FULL_EVERY = 30              # every 30th tick, a full collection


def collect_on_gui_thread(parent: QObject) -> QTimer:
    """Disable automatic collection and collect from a timer on the GUI thread; returns the timer."""
    gc.disable()
    ticks = [0]

    def collect() -> None:
        ticks[0] += 1
        threads.release_finished()
        gc.collect(2 if ticks[0] % FULL_EVERY == 0 else 1)

    timer = QTimer(parent)
    timer.timeout.connect(collect)
    timer.start(YOUNG_EVERY_MS)
    return timer
