"""The KV lab's first raise (issue 22) counted turn by turn: after the panel's own turn, no turn of the event loop
builds more than one of the bytes figure's three plots or draws more than one dtype's curves, and the figure is not
painted while its plots are still being built (each PlotItem and each paint of the figure is ~15-20 ms of GUI work;
the three plots built in one turn with the panel's first drawing and their paint held the window 120-240 ms at
8,000 tokens). Built in parts, the figure paints what one built at once paints, pixel for pixel. A turn is what runs
between two beats of a 0 ms heartbeat timer, as bench/bench_tab_raise.py counts GUI work between its beats."""
from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import QEvent
from PySide6.QtWidgets import QApplication

from explorer.app.panels.kv_lab import KVLabPanel
from explorer.app.state.session import Session
from explorer.app.widgets.kv_plot import DTYPES, BytesPlot
from explorer.core import kv_variants as kv
from tests.app.synthetic_trace import build_trace
from tests.app.turn_counter import TurnCounter


class Turns(TurnCounter):
    """Per turn: PlotItems built, the plots given curves (one per dtype drawn), and paints of a BytesPlot, with
    how many plots it had when painted."""

    def __init__(self, monkeypatch) -> None:
        super().__init__(start=False)                                  # the test starts the beat
        build = pg.PlotItem.__init__
        monkeypatch.setattr(pg.PlotItem, "__init__", lambda item, *a, **k: self._count("plots") or build(item, *a, **k))
        plot = pg.PlotItem.plot

        def curve(item, *args, **kwargs):
            self.now["drawn"].add(id(item))
            return plot(item, *args, **kwargs)

        monkeypatch.setattr(pg.PlotItem, "plot", curve)

    @staticmethod
    def _new() -> dict:
        return {"plots": 0, "drawn": set(), "paints": []}

    def eventFilter(self, watched, event) -> bool:
        if event.type() == QEvent.Type.Paint and isinstance(watched.parent(), BytesPlot):
            self.now["paints"].append(len(watched.parent().plots))
        return False


def model_session() -> Session:
    trace = build_trace(n_layers=4, n_heads=6, n_kv_heads=2, d_head=16, max_positions=4096)
    session = Session()
    session.set_model(trace.model)
    session.set_trace(trace)
    return session


def test_the_first_raise_builds_one_plot_or_draws_one_dtype_a_turn_and_paints_no_half_built_figure(qtbot,
                                                                                                     monkeypatch):
    session = model_session()
    variants = len(kv.variants(kv.shape_from_info(session.model), None))
    panel = KVLabPanel(session)
    qtbot.addWidget(panel)
    panel.resize(1200, 400)
    turns = Turns(monkeypatch)
    panel.show()                                      # the tab raised: built, shown and drawn in this turn
    turns.end_turn()
    turns.beat.start(0)
    tab = panel.variants_tab
    qtbot.waitUntil(lambda: tab._plot is not None and not tab._plot.turns.running, timeout=10_000)
    qtbot.wait(50)                                    # the last part's paint
    turns.stop()
    raised, later = turns.turns[0], turns.turns[1:]
    assert raised["plots"] == 0 and not raised["drawn"], "the figure was built or drawn in the raise's own turn"
    assert sum(turn["plots"] for turn in later) == len(DTYPES)
    assert sum(len(turn["drawn"]) for turn in later) == len(DTYPES)
    for turn in later:
        assert turn["plots"] + len(turn["drawn"]) <= 1, f"a turn did more than one heavy piece: {turns.turns}"
        assert len(turn["paints"]) <= 1, f"the figure painted twice in one turn: {turns.turns}"
    painted = [plots for turn in later for plots in turn["paints"]]
    assert painted and all(plots == len(DTYPES) for plots in painted), f"a half-built figure painted: {painted}"
    assert all(len(item.listDataItems()) == variants for item in tab.plot.plots.values())


def test_a_figure_built_in_parts_out_of_sight_paints_what_one_built_at_once_paints(qtbot):
    """As VariantsTab builds it: the empty figure, its plots added a part a turn, then shown and drawn."""
    shape = kv.shape_from_info(model_session().model)
    in_parts, at_once = BytesPlot(titled=False, plots=False), BytesPlot(titled=False)
    qtbot.addWidget(in_parts)
    qtbot.addWidget(at_once)
    for _ in in_parts.add_plots():
        QApplication.processEvents()                  # the turns between the parts
    assert list(in_parts.plots) == list(at_once.plots) == list(DTYPES)
    for plot in (in_parts, at_once):
        plot.resize(900, 420)
        plot.show()
        qtbot.waitExposed(plot)
        plot.draw(shape, None, "m")
    QApplication.processEvents()
    assert in_parts.grab().toImage() == at_once.grab().toImage()


def test_a_drawing_in_turns_paints_once_after_its_last_dtype_and_a_dropped_one_leaves_the_figure_painting(qtbot):
    shape = kv.shape_from_info(model_session().model)
    plot = BytesPlot(titled=False)
    qtbot.addWidget(plot)
    plot.draw_later(shape, None, "m")
    plot.turns.pause()                                # its turns run by hand
    for _ in range(1 + len(DTYPES)):                  # the curves' numbers, then each dtype's curves
        plot.turns.step()
        assert not plot.updatesEnabled()
    plot.turns.step()                                 # the paint's own turn
    assert not plot.turns.running and plot.updatesEnabled()
    plot.draw_later(shape, None, "m")
    plot.turns.pause()
    plot.turns.step()
    assert not plot.updatesEnabled()
    plot.clear_curves()                               # dropped half drawn (another model, a newer drawing)
    assert plot.updatesEnabled()
