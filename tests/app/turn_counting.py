"""Counting what a panel builds in each turn of the event loop (issue 22: no tab switch blocks the window for more
than 100 ms): the pyqtgraph PlotItems made (colour bars aside) by turn, turn 0 being the one that builds and raises
the panel and each call of the panel's next part (Turns.step) starting the next."""
from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import pyqtgraph as pg

from explorer.app.widgets.turns import Turns


def counting_turns(monkeypatch, before: Callable[[int], None] | None = None,
                   after: Callable[[int], None] | None = None) -> Counter:
    """The plots made by turn, filled as the panel builds them; `before(turn)` and `after(turn)` run around each
    later part (a model answer handed in before it, what was drawn read after it)."""
    made, turn = Counter(), [0]
    make, next_part = pg.PlotItem.__init__, Turns.step

    def counted(self, *args, **kwargs):
        if not isinstance(self, pg.ColorBarItem):
            made[turn[0]] += 1
        make(self, *args, **kwargs)

    def a_turn(self):
        turn[0] += 1
        if before is not None:
            before(turn[0])
        next_part(self)
        if after is not None:
            after(turn[0])

    monkeypatch.setattr(pg.PlotItem, "__init__", counted)
    monkeypatch.setattr(Turns, "step", a_turn)
    return made
