"""Turns (explorer/app/widgets/turns.py): a generator's parts, one per turn of the event loop.

Expectation, independent of the helper: a part is a pass of the event loop of its own (a zero timer's turn), so
processing the events once runs one part; `finish` runs what is left at once; `stop` closes the generator (its
`finally` runs) and `finished` is never said for it; `before` saying False leaves the parts waiting."""
from __future__ import annotations

from PySide6.QtCore import QObject
from PySide6.QtWidgets import QApplication

from explorer.app.widgets.turns import Turns


def parts(log: list, n: int = 3):
    try:
        for index in range(n):
            log.append(index)
            yield
    finally:
        log.append("closed")


def test_one_part_a_turn_then_finished(qtbot):
    owner, log, done = QObject(), [], []
    turns = Turns(owner)
    turns.finished.connect(lambda: done.append(True))
    turns.start(parts(log), now=True)
    assert log == [0] and turns.running
    for _ in range(200):                # a loaded machine may deliver the turn's timer a pass or two later
        QApplication.processEvents()
        if len(log) > 1:
            break
    assert log == [0, 1], "more or less than one part in a turn"
    qtbot.waitUntil(lambda: not turns.running, timeout=2000)
    assert log == [0, 1, 2, "closed"] and done == [True]


def test_finish_runs_the_rest_now_and_stop_closes(qtbot):
    owner, log = QObject(), []
    turns = Turns(owner)
    turns.start(parts(log))
    assert log == [] and turns.running               # not now: the first part waits for the next turn
    turns.finish()
    assert log == [0, 1, 2, "closed"] and not turns.running
    stopped, done = [], []
    turns.finished.connect(lambda: done.append(True))
    turns.start(parts(stopped), now=True)
    assert turns.stop() and stopped == [0, "closed"] and not done
    assert not turns.stop(), "nothing was left to stop"


def test_before_leaves_the_parts_waiting(qtbot):
    owner, log, allowed = QObject(), [], [False]
    turns = Turns(owner, before=lambda: allowed[0])
    turns.start(parts(log))
    for _ in range(3):
        QApplication.processEvents()
    assert log == [] and turns.running
    allowed[0] = True
    turns.step()
    assert log == [0]
