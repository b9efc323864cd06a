"""Counting GUI work turn by turn: a turn is what runs between two beats of a 0 ms heartbeat timer, as
bench/bench_tab_raise.py counts GUI work between its beats. Tests of a panel's first raise subclass TurnCounter,
say what a turn holds (`_new`) and count into `now`; `turns` holds each finished turn's counts."""
from __future__ import annotations

from PySide6.QtCore import QObject, QTimer
from PySide6.QtWidgets import QApplication


class TurnCounter(QObject):
    """Counts per turn once `beat` runs (started at once unless `start` is False), and sees every event of the
    application through `eventFilter` (a subclass's, to count paints)."""

    def __init__(self, start: bool = True) -> None:
        super().__init__()
        self.turns: list[dict] = []
        self.now = self._new()
        QApplication.instance().installEventFilter(self)
        self.beat = QTimer()
        self.beat.timeout.connect(self.end_turn)
        if start:
            self.beat.start(0)

    @staticmethod
    def _new() -> dict:
        raise NotImplementedError

    def _count(self, what: str) -> None:
        self.now[what] += 1

    def end_turn(self) -> None:
        self.turns.append(self.now)
        self.now = self._new()

    def stop(self) -> None:
        self.beat.stop()
        QApplication.instance().removeEventFilter(self)
        self.end_turn()
