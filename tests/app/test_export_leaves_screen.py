"""An export never changes what the screen shows (drive21 m21: after Export ▸ Why this token as shown the live
panel's bars were seen in the print-ready PNG's colours for the rest of the session).

Expectation, from the panel on screen alone: after saving Why this token as shown (PNG and SVG, light and dark
figure themes) its bars have the brushes they had, its view's background and axes the pens they had, and a grab of
the panel is the same picture, pixel for pixel, as one taken before.
"""
from __future__ import annotations

import pyqtgraph as pg
import pytest
from PySide6.QtGui import QImage

from explorer.app.panels.attribution import AttributionPanel
from explorer.drawing import export
from tests.app.why_helpers import answered


def looks(panel) -> dict:
    """What the panel's plots are drawn with: each bar's brush colour, each axis's pens, the views' backgrounds."""
    bars = [item for item in panel.bars.items if isinstance(item, pg.BarGraphItem)]
    views = panel.findChildren(pg.GraphicsView)
    axes = [item for view in views for item in view.items() if isinstance(item, pg.AxisItem)]
    return {"bars": [brush.color().name() for item in bars for brush in item.opts["brushes"]],
            "axes": [(axis.pen().color().name(), axis.textPen().color().name()) for axis in axes],
            "backgrounds": [view.backgroundBrush().color().name() for view in views]}


def picture(qtbot, panel) -> QImage:
    qtbot.wait(50)
    return panel.grab().toImage()


@pytest.mark.parametrize(("suffix", "theme"), [(".png", "light"), (".png", "dark"), (".svg", "dark")])
def test_exporting_why_this_token_leaves_the_screen_as_it_was(qtbot, session, traced_llama, tmp_path, suffix, theme):
    panel = answered(qtbot, AttributionPanel, session, traced_llama, "wide")
    before, shown = looks(panel), picture(qtbot, panel)
    assert before["bars"], "no bars drawn: nothing to compare"
    export.save_widget(panel, tmp_path / f"why{suffix}", theme=theme)
    assert looks(panel) == before
    after = picture(qtbot, panel)
    assert after.size() == shown.size() and after == shown, "the panel on screen looks other than before the export"
