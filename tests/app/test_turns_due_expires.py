"""A part due that no turn of the event loop runs (a window closed, its timers never fired) holds the attention
grid for at most turns.HOLD_S, not for ever: in the suite a window closed by one test left its panels' parts due,
and the next test's grid thread waited on them without end (CI, test_grid_filler_deleted after a window test)."""
from __future__ import annotations

import time

from PySide6.QtCore import QObject

from explorer.app.widgets import turns
from explorer.app.widgets.turns import Turns


def test_a_part_due_that_never_runs_stops_holding_after_the_hold(monkeypatch):
    monkeypatch.setattr(turns, "HOLD_S", 0.2)
    parent = QObject()
    drawing = Turns(parent)
    drawing.start(part for part in (None, None, None))   # due in the next turn, which never comes (no events)
    try:
        assert turns.pending()
        time.sleep(0.3)
        assert not turns.pending(), "a part due past the hold still holds the grid"
        drawing.step()                           # a part runs and the next is due: held again, afresh
        assert turns.pending()
    finally:
        drawing.stop()
    assert not turns.pending()
