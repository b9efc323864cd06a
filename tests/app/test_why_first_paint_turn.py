"""Why this token's first raise paints its view in a turn of its own, not in the turn that makes the heads' map: the
two in one go held the window 47-76 ms at 8,000 tokens (the map ~30 ms of pyqtgraph's making, the paint of its
four axes ~30 ms; issue 22: a tab switch never blocks for more than 100 ms). Counted, not timed: the turn of each
paint of the view, a turn being a part of the panel's drawing (Turns.step) and what the event loop runs after it."""
from __future__ import annotations

from PySide6.QtCore import QEvent, QObject

from explorer.app.panels.attribution import AttributionPanel
from explorer.app.widgets.turns import Turns
from tests.app.why_helpers import SIZES, shown


class Paints(QObject):
    """The turn of each paint of the watched view."""

    def __init__(self, view, turn: list[int]) -> None:
        super().__init__(view)
        self.turn, self.painted = turn, []
        view.viewport().installEventFilter(self)

    def eventFilter(self, watched, event) -> bool:
        if event.type() == QEvent.Type.Paint:
            self.painted.append(self.turn[0])
        return False


def test_the_view_is_first_painted_in_a_turn_after_the_one_that_makes_the_heads_map(qtbot, session, traced_llama,
                                                                                   monkeypatch):
    _, trace = traced_llama
    panel = AttributionPanel(session)
    panel.executor = [].append                       # no answer: the plots alone
    turn, heads_made = [0], []
    step, build_heads = Turns.step, AttributionPanel._build_heads

    def counted_step(self):
        turn[0] += 1
        step(self)

    def counted_heads(self):
        heads_made.append(turn[0])
        build_heads(self)

    monkeypatch.setattr(Turns, "step", counted_step)
    monkeypatch.setattr(AttributionPanel, "_build_heads", counted_heads)
    paints = Paints(panel.view, turn)
    session.set_trace(trace)
    shown(qtbot, panel, SIZES["wide"])
    qtbot.waitUntil(lambda: not panel.drawing, timeout=5000)
    qtbot.wait(100)
    assert heads_made, "the heads' map was not made in the panel's turns: the test says nothing"
    assert heads_made[0] not in paints.painted, \
        f"the view was painted in the turn that made the heads' map (turn {heads_made[0]}): {paints.painted}"
    assert any(at > heads_made[0] for at in paints.painted), f"the built view was not painted: {paints.painted}"
