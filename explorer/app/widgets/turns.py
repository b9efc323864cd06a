"""Work in parts, one part a turn of the event loop, so that no turn holds the window long.

The work is a generator that yields between parts (a plot built, a dtype's curves drawn). `Turns` runs its next
part on a zero-interval single-shot timer, not a queued call: queued calls ran two parts, and their paints, in
one pass of the event loop before the window's own timers and input; a timer gives each part a pass of its
own. A panel's drawing (Panel.draw_in_parts), the KV lab's bytes plots (BytesPlot.draw_later) and their
building (VariantsTab) all run their parts through it.

While any Turns has a part due, `pending()` is true: the all-heads grid's threads (grid_filler) wait between tiles
and blocks of rows meanwhile, since a raise at 8,000 tokens froze 96-217 ms waiting on them for Python's lock.
"""
from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, nullcontext

from PySide6.QtCore import QObject, QTimer, Signal

_due: dict[object, float] = {}     # a key per Turns with a part due (its timer started, or its part running): since
_due_lock = threading.Lock()
# A part due this long holds the grid no longer: a part runs in a turn of the event loop, so one due longer is a
# window's whose event loop no longer turns (a window closed, its timers never run) or a part far past any turn's
# length; the grid waiting on it for ever was a grid that never filled.
HOLD_S = 2.0


def pending() -> bool:
    """Whether any Turns has had a part due for under HOLD_S: read from other threads (the grid's), which wait
    meanwhile."""
    now = time.monotonic()
    with _due_lock:
        return any(now - since < HOLD_S for since in _due.values())


def _mark(key: object, due: bool) -> None:
    with _due_lock:
        if due:
            _due[key] = time.monotonic()
        else:
            _due.pop(key, None)


class Turns(QObject):
    """One generator's parts, a turn each: `start` it, `finish` what is left now, or `stop` it (its generator
    closed, so its `finally` runs). `finished` is emitted after its last part ran, not when it is stopped."""

    finished = Signal()

    def __init__(self, parent: QObject, before: Callable[[], bool] | None = None,
                 each: Callable[[], AbstractContextManager] = nullcontext) -> None:
        """`before`: asked before each part; False leaves it (and the rest) waiting, or dropped (`stop`).
        `each`: the context every part runs in."""
        super().__init__(parent)
        self._parts: Iterator | None = None
        self._before, self._each = before, each
        self._timer = QTimer(self, singleShot=True, interval=0)
        self._timer.timeout.connect(lambda: self.step())     # looked up at each turn: a test may count them
        self._key = key = object()              # not self: a Turns deleted with its parent must not stay due
        self.destroyed.connect(functools.partial(_mark, key, False))

    def _due_next(self) -> None:
        """The next part in the next turn: due (pending) until it runs or is dropped."""
        _mark(self._key, True)
        self._timer.start()

    def _none_due(self) -> None:
        _mark(self._key, False)
        self._timer.stop()

    @property
    def running(self) -> bool:
        """Parts are still to run."""
        return self._parts is not None

    def runs(self, parts: Iterator | None) -> bool:
        """Whether `parts` are the parts still to run."""
        return parts is not None and self._parts is parts

    def start(self, parts: Iterator, now: bool = False) -> None:
        """Run `parts` a part a turn, the first now (`now`) or in the next turn; what ran before is stopped."""
        self.stop()
        self._parts = parts
        if now:
            _mark(self._key, True)
            self.step()
        else:
            self._due_next()

    def step(self) -> None:
        """The next part, run now as its turn runs it (unless `before` says not yet); the one after it in the next
        turn."""
        parts = self._parts
        if parts is None or (self._before is not None and not self._before()):
            if self._parts is parts and not self._timer.isActive():
                _mark(self._key, False)         # waiting (hidden) or done: nothing due holds the grid
            return
        try:
            with self._each():
                next(parts)
        except StopIteration:
            if self._parts is parts:
                self._parts = None
                _mark(self._key, False)
                self.finished.emit()
            return
        except BaseException:
            if self._parts is parts:
                self._parts = None
                _mark(self._key, False)
            raise
        if self._parts is parts:
            self._due_next()

    def pause(self) -> None:
        """No part runs by itself until the next `step` (a test's turns run by hand, one at a time)."""
        self._none_due()

    def finish(self) -> None:
        """Every part still to run, run now."""
        parts, self._parts = self._parts, None
        self._none_due()
        for _ in parts or ():
            pass
        if parts is not None:
            self.finished.emit()

    def stop(self) -> bool:
        """Drop the parts still to run (their generator closed); whether there were any."""
        parts, self._parts = self._parts, None
        self._none_due()
        if parts is not None:
            parts.close()
        return parts is not None
