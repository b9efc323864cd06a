"""A heat map labels only the sides it shows: its hidden right and bottom axes were given every row and column
label too, and measured them, so the Q/K/V tab's three maps measured each of 8,000 row labels six times at its
first raise (most of its freeze). Expectation: one measurement per distinct label and shown axis, counted."""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtGui import QFontMetricsF

from explorer.drawing import heatmap_axes
from explorer.drawing.heatmap import Heatmap


def test_row_labels_are_measured_for_the_shown_side_only(qtbot, monkeypatch):
    measured = []

    class CountingMetrics(QFontMetricsF):
        def horizontalAdvance(self, text, *args):
            measured.append(text)
            return super().horizontalAdvance(text, *args)

    monkeypatch.setattr(heatmap_axes, "QFontMetricsF", CountingMetrics)
    view = pg.GraphicsLayoutWidget()
    qtbot.addWidget(view)
    heatmap = Heatmap(view.ci, axes=("left", "top"))
    rows = [f"{i} tok{i % 37}" for i in range(2000)]
    heatmap.set_matrix(np.zeros((2000, 4), np.float32), (0.0, 1.0), rows, ["a", "b", "c", "d"])
    view.resize(400, 600)
    view.show()
    qtbot.waitExposed(view)
    counted = [text for text in measured if text in set(rows)]
    assert len(counted) == len(rows), f"{len(counted)} measurements of {len(rows)} row labels"
    assert heatmap.axes["left"].width() > 0
