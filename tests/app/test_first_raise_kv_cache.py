"""The KV cache's first raise at 8,000 tokens (issue 22, "switching tabs never blocks for more than 100 ms"): the
panel is built in one turn of the event loop with none of its plots, and its plots are built and drawn on the
turns after it, one heavy piece a turn (a PlotItem built, or the occupancy drawn, or the blocks drawn); it ends
drawing what the panel draws at once when the trace comes while it is shown, and a trace given meanwhile is
the one drawn."""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg

from explorer.app.panels import KVCachePanel
from explorer.app.state.session import Session
from explorer.app.widgets.kv_occupancy import OccupancyPlots
from explorer.drawing.heatmap import Heatmap
from tests.app.test_kv_cache_long_trace import STEPS, long_trace


def drawing(panel) -> list:
    """Every curve's and bar's data of the two plots, the blocks' image, and the summary line."""
    items = []
    for plot in (panel.layer_plot, panel.total_plot):
        for item in plot.items:
            if hasattr(item, "getData"):
                items.extend(np.asarray(a) for a in item.getData() if a is not None)
            elif hasattr(item, "opts") and "height" in item.opts:
                items.append(np.asarray(item.opts["height"]))
    image = panel.blocks.image.image
    return items + [np.asarray(image), panel.summary.text()]


def panel_on(qtbot, session):
    panel = KVCachePanel(session)
    qtbot.addWidget(panel)
    panel.resize(1200, 420)
    return panel


def blocks_drawn(panel) -> bool:
    """The paged blocks have their matrix (read without building the grid)."""
    return panel._blocks is not None and panel._blocks.image.image is not None


def assert_same_drawing(ours: list, theirs: list) -> None:
    assert len(ours) == len(theirs) and len(ours) > 3
    for mine, one_shot in zip(ours, theirs):
        if isinstance(mine, str):
            assert mine == one_shot
        else:
            np.testing.assert_array_equal(mine, one_shot)


def test_the_first_raise_at_a_long_trace_draws_on_later_turns_the_same_as_at_once(qtbot):
    trace = long_trace(STEPS)
    at_once = panel_on(qtbot, Session())
    at_once.show()
    at_once.session.set_trace(trace)                              # shown first: drawn in the same call
    session = Session()
    session.set_trace(trace)
    raised = panel_on(qtbot, session)
    raised.show()                                                 # built with the trace there: its first raise
    assert not blocks_drawn(raised), "the blocks were drawn in the raise's own turn"
    assert "Drawing" in raised.summary.text(), "no working state while the drawing waits"
    assert raised.drawing and raised.note.isVisibleTo(raised), "the panel does not say it is drawing"
    qtbot.waitUntil(lambda: not raised.drawing, timeout=5000)
    assert not raised.note.isVisibleTo(raised)
    assert_same_drawing(drawing(raised), drawing(at_once))


def test_the_drawing_after_the_raise_is_of_the_trace_there_then(qtbot):
    session = Session()
    session.set_trace(long_trace(STEPS))
    panel = panel_on(qtbot, session)
    panel.show()
    shorter = long_trace(2)
    session.set_trace(shorter)                                    # a new trace before the next turn
    qtbot.waitUntil(lambda: blocks_drawn(panel) and not panel.drawing, timeout=5000)
    at_once = panel_on(qtbot, Session())
    at_once.show()
    at_once.session.set_trace(shorter)
    ours, theirs = drawing(panel), drawing(at_once)
    assert ours[-1] == theirs[-1]
    for mine, one_shot in zip(ours[:-1], theirs[:-1]):
        np.testing.assert_array_equal(mine, one_shot)


class Work:
    """The heavy work done since the last `turn()`: PlotItems built, and sections drawn (the occupancy: its bars per
    layer and its curve against tokens; the blocks: their matrix, with the colour bar the heat map makes with its
    first matrix)."""

    def __init__(self, monkeypatch) -> None:
        self.now = {"plots": 0, "draws": 0}
        self.in_drawing = False
        plot_init = pg.PlotItem.__init__

        def counted_init(item, *args, **kwargs):
            self.now["plots"] += not self.in_drawing
            plot_init(item, *args, **kwargs)

        monkeypatch.setattr(pg.PlotItem, "__init__", counted_init)
        for owner, name in ((OccupancyPlots, "draw_layers"), (Heatmap, "set_matrix")):
            original = getattr(owner, name)
            monkeypatch.setattr(owner, name, lambda *a, original=original, **k: self._draw(original, a, k))

    def _draw(self, original, args, kwargs):
        self.now["draws"] += 1
        self.in_drawing = True
        try:
            return original(*args, **kwargs)
        finally:
            self.in_drawing = False

    def turn(self) -> dict:
        done, self.now = self.now, {"plots": 0, "draws": 0}
        return done


def test_the_build_turn_builds_no_plot_and_each_later_turn_one_piece_of_work(qtbot, monkeypatch):
    """Four PlotItems and the plots' first drawing in the turn that built the panel held the window ~130 ms at 8,000
    tokens (each PlotItem ~10-25 ms, a drawing and its paint 20-40 ms): none is built with the panel, and each later
    turn builds one plot or draws one section, never more."""
    session = Session()
    session.set_trace(long_trace(STEPS))
    work = Work(monkeypatch)
    panel = panel_on(qtbot, session)                        # the dock's build turn: the panel, not yet shown
    assert work.turn() == {"plots": 0, "draws": 0}, "the panel's build built plots or drew"
    panel.show()                                            # its first drawing's turn
    panel._turns.pause()                                        # the turns after it run by hand, one at a time
    turns = [work.turn()]
    while panel.drawing and len(turns) < 20:
        panel._turns.step()
        turns.append(work.turn())
    assert not panel.drawing
    for index, done in enumerate(turns):
        assert done["plots"] + done["draws"] <= 1, f"turn {index} did {done}: more than one piece of work"
    assert sum(done["plots"] for done in turns) == 3, "not every plot was built (two plots and the grid)"
    assert sum(done["draws"] for done in turns) == 2, "the occupancy and the blocks were not drawn once each"
    assert blocks_drawn(panel)


def test_a_panel_hidden_before_its_pieces_are_drawn_draws_them_once_shown_again(qtbot):
    trace = long_trace(STEPS)
    session = Session()
    session.set_trace(trace)
    panel = panel_on(qtbot, session)
    panel.show()
    panel._turns.pause()
    panel.set_exposed(False)                                # its tab put behind another before the next turn
    panel._turns.step()
    assert not panel.drawing and not blocks_drawn(panel), "a hidden panel went on drawing"
    panel.set_exposed(True)                                 # raised again: the drawing starts over, in turns
    qtbot.waitUntil(lambda: not panel.drawing, timeout=5000)
    at_once = panel_on(qtbot, Session())
    at_once.show()
    at_once.session.set_trace(trace)
    assert_same_drawing(drawing(panel), drawing(at_once))
