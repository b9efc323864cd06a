"""Matrix axes label every token they have room for: the key (top) axis as many as the query (left) axis."""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtGui import QImage, QPainter

from explorer.app.panels.heatmap import Heatmap

LABELS = [f"␣word{i:02d}" for i in range(22)]          # 7 characters each, like '␣capital'


def _shown(qtbot, size=(640, 640)):
    widget = pg.GraphicsLayoutWidget()
    widget.resize(*size)
    qtbot.addWidget(widget)
    heatmap = Heatmap(widget.ci, colorbar=False)
    heatmap.set_matrix(np.eye(len(LABELS)), row_labels=LABELS, col_labels=LABELS)
    widget.show()
    qtbot.waitExposed(widget)
    widget.ci.setGeometry(0, 0, *size)
    qtbot.wait(50)
    return widget, heatmap


def _labelled(axis, length_px: float) -> list[float]:
    levels = axis.tickValues(-0.5, len(LABELS) - 0.5, length_px)
    return levels[0][1] if levels else []


def test_the_key_axis_labels_every_token_the_query_axis_labels(qtbot):
    widget, heatmap = _shown(qtbot)
    view = heatmap.plot.getViewBox().sceneBoundingRect()
    top = _labelled(heatmap.axes["top"], view.width())
    left = _labelled(heatmap.axes["left"], view.height())
    assert len(left) == len(LABELS) and len(top) == len(left)


def test_key_labels_are_drawn_upright_and_whole(qtbot):
    widget, heatmap = _shown(qtbot)
    axis = heatmap.axes["top"]
    image = QImage(int(axis.width()), int(axis.height()), QImage.Format.Format_ARGB32)
    image.fill(0)
    painter = QPainter(image)
    axis.paint(painter, None, None)
    painter.end()
    alpha = np.frombuffer(image.constBits(), np.uint8).reshape(image.height(), image.bytesPerLine() // 4, 4)[..., 3]
    ink_rows = np.flatnonzero((alpha > 0).any(axis=1))
    # Upright text of 7 characters is taller than a line of text (about 13 px) and fits in the axis.
    assert ink_rows.size and ink_rows[-1] - ink_rows[0] > 35
    assert axis.height() >= 6.5 * len(LABELS[0])
