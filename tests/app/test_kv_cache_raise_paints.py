"""The KV cache's first raise at a long trace (issue 22, "switching tabs never blocks for more than 100 ms") counted
turn by turn: each of its figures (the occupancy plots, the paged blocks) is painted only once drawn, never half
built, and not in the turn that drew it: a plot built and the figure's paint in one turn held the window up to ~90 ms
at 8,000 tokens. A turn is what runs between two beats of a
0 ms heartbeat timer, as bench/bench_tab_raise.py counts GUI work between its beats. A second raise with the same
trace and selection builds nothing and draws nothing again.

Expectation: counted from pyqtgraph's and Qt's own calls (PlotItem made, Heatmap.set_matrix, paint events of the
figures' viewports), against what the panel shows once drawn (tests/app/test_first_raise_kv_cache.py checks that
drawing against the panel drawn at once).
"""
from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import QEvent

from explorer.app.panels import KVCachePanel
from explorer.app.state.session import Session
from explorer.drawing.heatmap import Heatmap
from tests.app.test_kv_cache_long_trace import STEPS, long_trace
from tests.app.turn_counter import TurnCounter


class Turns(TurnCounter):
    """Per turn: PlotItems made (for the occupancy or the blocks' figure), matrices set, and paints of the occupancy
    figure (with whether its curve was drawn) and of the blocks' figure (with whether its matrix was set)."""

    def __init__(self, monkeypatch, panel) -> None:
        super().__init__()
        self.panel = panel
        build, matrix = pg.PlotItem.__init__, Heatmap.set_matrix
        monkeypatch.setattr(pg.PlotItem, "__init__",
                            lambda item, *a, **k: self._count(self._building()) or build(item, *a, **k))
        monkeypatch.setattr(Heatmap, "set_matrix",
                            lambda map_, *a, **k: self._count("matrices") or matrix(map_, *a, **k))

    @staticmethod
    def _new() -> dict:
        return {"plots": 0, "block plots": 0, "matrices": 0, "paints": []}

    def _building(self) -> str:
        """Which figure a PlotItem made now is for: the occupancy plots are built first."""
        return "plots" if self.panel.plots.total_plot is None else "block plots"

    def eventFilter(self, watched, event) -> bool:
        if event.type() == QEvent.Type.Paint:
            panel = self.panel
            if watched is panel.plots.viewport():
                total = panel.plots.total_plot
                self.now["paints"].append(("plots", total is not None and panel.plots.total_curve.isVisible()))
            elif watched is panel.block_view.viewport():
                blocks = panel._blocks
                self.now["paints"].append(("blocks", blocks is not None and blocks.image.image is not None))
        return False


def test_each_figure_is_painted_once_drawn_in_a_turn_of_its_own_and_not_again_at_a_second_raise(qtbot, monkeypatch):
    session = Session()
    session.set_trace(long_trace(STEPS))
    panel = KVCachePanel(session)
    qtbot.addWidget(panel)
    panel.resize(1200, 420)
    turns = Turns(monkeypatch, panel)
    panel.show()                                                   # its first raise
    qtbot.waitUntil(lambda: not panel.drawing and panel._blocks is not None, timeout=10000)
    qtbot.wait(200)
    turns.stop()
    paints = [paint for turn in turns.turns for paint in turn["paints"]]
    assert ("plots", True) in paints and ("blocks", True) in paints, f"a figure was never painted drawn: {paints}"
    assert all(drawn for _, drawn in paints), f"a figure was painted before it was drawn: {paints}"
    for turn in turns.turns:                   # the figure being built or drawn is not painted in the same turn
        building = {"plots": turn["plots"] > 0, "blocks": turn["block plots"] + turn["matrices"] > 0}
        assert not any(building[figure] for figure, _ in turn["paints"]), f"built or drawn, and painted: {turn}"
    assert max(turn["plots"] + turn["block plots"] for turn in turns.turns) <= 1
    panel.hide()                                                   # its tab behind another, then raised again
    turns = Turns(monkeypatch, panel)
    panel.show()
    qtbot.wait(200)
    turns.stop()
    again = sum(turn["plots"] + turn["block plots"] + turn["matrices"] for turn in turns.turns)
    assert again == 0, "a second raise built or drew again"
