"""Why this token's bars take the heads' map's colour convention: a negative part's bar is drawn in the colour the
map gives a negative value (its lowest), a positive one's in the colour it gives a positive value. The bars were
red for negative beside a map red for positive (drive21 m3). Checked against the map's own colour lookup."""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg

from explorer.app.panels.attribution import AttributionPanel
from tests.app.why_helpers import answered


class Parts:
    """A result whose largest parts have both signs."""

    def largest(self, count: int):
        return [("L0.H0", 0.6), ("MLP 1", -0.8), ("L1.H1", -0.2)][:count]


def heat_colour(panel, value: float):
    """The colour the heads' map draws `value` in: its colour map at the value's place between its levels."""
    low, high = panel.heads.image.getLevels()
    return panel.heads.colormap.map(float(np.clip((value - low) / (high - low), 0, 1)), mode="qcolor")


def test_a_negative_bar_has_the_maps_colour_for_a_negative_value(qtbot, session, traced_llama):
    panel = answered(qtbot, AttributionPanel, session, traced_llama, "tall")
    panel._draw_bars(Parts())
    bars = next(item for item in panel.bars.items if isinstance(item, pg.BarGraphItem))
    values, brushes = [0.6, -0.8, -0.2], bars.opts["brushes"]
    low, high = panel.heads.image.getLevels()
    assert low < 0 < high
    for value, brush in zip(values, brushes):
        drawn = brush.color()
        extreme = heat_colour(panel, low if value < 0 else high)        # the map's strongest colour of the sign
        assert drawn.getRgb()[:3] == extreme.getRgb()[:3], (value, drawn.name(), extreme.name())
        inside = heat_colour(panel, value * (high - low) / 4)              # a value of that sign within the map
        assert (drawn.red() > drawn.blue()) == (inside.red() > inside.blue()), (value, drawn.name(), inside.name())
