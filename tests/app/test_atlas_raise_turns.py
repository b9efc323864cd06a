"""The head atlas's first raise and its resizes hold the window for little at a time (issue 22, "switching tabs never
blocks for more than 100 ms"): its two maps, a PlotItem with axes, menus and a colour bar each (~70 ms of GUI work
apiece at 8,000 tokens), were both made in the turn that built the panel; and its splitter was shared out again at
every resize, relaying both maps at sizes a few px apart.

Expectation: counted, not timed. The panel is built and shown (its raise) with a trace and a selection: the turn of
the raise builds no map and each later turn of its drawing at most one, and once drawn the map holds the scores and
the selected head is framed. Resized by a few px at a time the splitter's sizes are set by no one but Qt; resized by
hundreds of px, or turned from wide to tall, the parts are shared out again.
"""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
from PySide6.QtCore import Qt

from explorer.app.panels import atlas
from explorer.app.state.session import Session
from explorer.app.widgets.atlas_shares import MATERIAL_PX, AtlasShares
from explorer.app.widgets.turns import Turns
from tests.app.screen_fit import settle
from tests.app.synthetic_trace import build_trace

LAYER, HEAD = 1, 2


def scored(panel, trace) -> np.ndarray:
    """The panel's scores come (as the model thread answers them), on the trace itself: an induction score per head."""
    heads = np.arange(16, dtype=np.float64).reshape(4, 4) / 16
    panel._on_scores(trace.model.name, SimpleNamespace(trace=trace, induction=heads, previous_token=heads, sink=heads))
    return heads


def test_a_raise_builds_no_map_in_its_own_turn_and_one_a_turn_after(qtbot, monkeypatch):
    built: list[str] = []                       # "map" per Heatmap made, "turn" per turn of the drawing
    making = atlas.Heatmap

    def counting(*args, **kwargs):
        built.append("map")
        return making(*args, **kwargs)
    monkeypatch.setattr(atlas, "Heatmap", counting)
    step = Turns.step

    def turn(self):
        built.append("turn")
        step(self)
    monkeypatch.setattr(Turns, "step", turn)
    trace = build_trace(n_layers=4, n_heads=4, prompt_len=12)
    session = Session()
    session.set_model(trace.model)
    session.set_trace(trace)
    session.select(layer=LAYER, head=HEAD)
    panel = atlas.AtlasPanel(session)
    qtbot.addWidget(panel)
    panel.resize(1000, 320)
    panel.show()                                        # the raise: built and shown in one turn
    raised = built.index("turn") if "turn" in built else len(built)
    assert built[:raised].count("map") == 0, f"the raise's own turn made {built[:raised].count('map')} maps"
    qtbot.waitUntil(lambda: not panel.drawing and panel.plots_built(), timeout=10000)
    turns = "".join("|" if what == "turn" else "m" for what in built[raised:]).split("|")
    assert max(part.count("m") for part in turns) <= 1, f"maps made a turn: {turns}"
    heads = scored(panel, trace)
    np.testing.assert_array_equal(panel.map.image.image, heads)
    assert panel.map.tile_box.isVisible()                     # the selected head is framed


def drawn_and_scored(qtbot, width: int, height: int):
    """An atlas panel of `width` x `height` on a small trace, shown, its maps built and its scores in."""
    trace = build_trace(n_layers=4, n_heads=4, prompt_len=12)
    session = Session()
    session.set_model(trace.model)
    session.set_trace(trace)
    panel = atlas.AtlasPanel(session)
    qtbot.addWidget(panel)
    panel.resize(width, height)
    panel.show()
    qtbot.waitUntil(lambda: not panel.drawing and panel.plots_built(), timeout=10000)
    scored(panel, trace)
    settle(0.3)
    return panel


def test_the_splitter_is_shared_again_only_when_it_turns_or_its_size_changed_materially(qtbot):
    panel = drawn_and_scored(qtbot, 1200, 420)
    splitter = panel.splitter
    assert splitter.orientation() == Qt.Orientation.Horizontal
    shared: list[list[int]] = []
    set_sizes = splitter.setSizes
    splitter.setSizes = lambda sizes: (shared.append(list(sizes)), set_sizes(sizes))
    for width in range(1201, 1201 + MATERIAL_PX // 2):             # nudged a px at a time
        panel.resize(width, 420)
        settle(0.05)
    assert shared == [], f"shared out again at resizes of a px: {shared}"
    panel.resize(1500, 420)
    settle(0.3)
    assert len(shared) >= 1, "not shared out again at a resize of 300 px"
    views = [plot.getViewBox().sceneBoundingRect().width() for plot in (panel.map.plot, panel.example.plot)]
    assert abs(views[0] - views[1]) <= 3, f"the two views are not equally wide once shared out: {views}"
    shared.clear()
    panel.resize(500, 900)
    settle(0.3)
    assert splitter.orientation() == Qt.Orientation.Vertical and shared, "not stacked and shared out when tall"


def test_a_share_measured_before_the_maps_were_laid_out_is_redone(qtbot, monkeypatch):
    """The splitter is shared out from what surrounds each plot's view (axes, colour bar, title). In the window on a
    loaded machine it was once measured while the map's axes were still being laid out (27 px around its view where
    there are 113) and nothing resized the panel after: the map's view was 82 px wide (CI, stop 44). Here the first
    measurement is that early one; once the maps are laid out the two views are equally wide."""
    measured = AtlasShares._around_views
    early = [True]

    def around_views(self):
        around = measured(self)
        if around is not None and early[0]:
            early[0] = False
            return [(width // 4, height) for width, height in around]      # the axes not laid out yet
        return around
    monkeypatch.setattr(AtlasShares, "_around_views", around_views)
    panel = drawn_and_scored(qtbot, 1000, 360)
    assert not early[0], "the early measurement was never taken"
    views = [plot.getViewBox().sceneBoundingRect().width() for plot in (panel.map.plot, panel.example.plot)]
    assert abs(views[0] - views[1]) <= 3, f"the two views are not equally wide once laid out: {views}"
