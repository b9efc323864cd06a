"""The KV cache's first raise at 8,000 tokens (issue 22, "switching tabs never blocks for more than 100 ms"), turn by
turn, in finer pieces than tests/app/test_kv_cache_raise_paints.py asks: a PlotItem (its axes, view and menus, 10-16
ms of GUI work) is made in a turn without the items its plot holds (with them the total plot's turn was 21-28 ms);
neither figure is painted until every piece is built and drawn (the occupancy plots painted while the blocks were still
to build shared a turn with a piece of that, 31-40 ms, and were painted again once the panel's "Drawing…" line left),
and each is then painted at the size it keeps.

Expectation: counted from pyqtgraph's own constructors (PlotItem, BarGraphItem, PlotDataItem) and Qt's paint events
of the figures' viewports, per turn of a 0 ms heartbeat (as bench/bench_tab_raise.py counts GUI work between beats),
against the panel's own state (drawing or not, the blocks' matrix set). What is drawn is checked against the panel
drawn at once in tests/app/test_first_raise_kv_cache.py.
"""
from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import QEvent

from explorer.app.panels import KVCachePanel
from explorer.app.state.session import Session
from tests.app.test_kv_cache_long_trace import STEPS, long_trace
from tests.app.turn_counter import TurnCounter


class Pieces(TurnCounter):
    """Per turn: PlotItems and plot items (bars, curves) made, and paints of either figure with the figure's size and
    whether the panel was still drawing then."""

    def __init__(self, monkeypatch, panel) -> None:
        super().__init__()
        self.panel = panel
        for cls, what in ((pg.PlotItem, "plot items"), (pg.BarGraphItem, "held"), (pg.PlotDataItem, "held")):
            made = cls.__init__
            monkeypatch.setattr(cls, "__init__", lambda item, *a, made=made, what=what, **k:
                                self._count(what) or made(item, *a, **k))

    @staticmethod
    def _new() -> dict:
        return {"plot items": 0, "held": 0, "paints": []}

    def eventFilter(self, watched, event) -> bool:
        if event.type() == QEvent.Type.Paint:
            for name, view in (("plots", self.panel.plots), ("blocks", self.panel.block_view)):
                if watched is view.viewport():
                    self.now["paints"].append((name, view.size().toTuple(), self.panel.drawing))
        return False


def raised_panel(qtbot, monkeypatch) -> tuple[KVCachePanel, Pieces]:
    session = Session()
    session.set_trace(long_trace(STEPS))
    panel = KVCachePanel(session)
    qtbot.addWidget(panel)
    panel.resize(1200, 420)
    pieces = Pieces(monkeypatch, panel)
    panel.show()                                                   # its first raise
    qtbot.waitUntil(lambda: not panel.drawing and panel._blocks is not None, timeout=10000)
    qtbot.wait(200)
    pieces.stop()
    return panel, pieces


def test_a_plot_is_made_in_a_turn_without_the_items_it_holds(qtbot, monkeypatch):
    _, pieces = raised_panel(qtbot, monkeypatch)
    assert sum(turn["held"] for turn in pieces.turns) >= 6, "the plots' bars and curves were not made in the raise"
    for turn in pieces.turns:
        assert not (turn["plot items"] and turn["held"]), f"a PlotItem and a plot's items made in one turn: {turn}"


def test_each_figure_is_painted_only_once_everything_is_drawn_at_the_size_it_keeps(qtbot, monkeypatch):
    panel, pieces = raised_panel(qtbot, monkeypatch)
    paints = [paint for turn in pieces.turns for paint in turn["paints"]]
    assert {name for name, _, _ in paints} == {"plots", "blocks"}, f"a figure was never painted: {paints}"
    assert not any(drawing for _, _, drawing in paints), f"a figure was painted while the panel drew: {paints}"
    kept = {"plots": panel.plots.size().toTuple(), "blocks": panel.block_view.size().toTuple()}
    assert all(size == kept[name] for name, size, _ in paints), f"painted at another size than it keeps: {paints}"
