"""The model map's shape labels read clean: no line of the map strikes through one, and none lies over a box.

Between two blocks the stream's line climbs from the last add of one block to the first norm of the next,
steeply across the narrow gap; its label, placed above the line's middle, was struck through by it ('T×d = 1|3×192',
seen on the map at 1920x1080). Judged by the pixels of the map's own picture: inside a label, no pixel has the
colour the lines are drawn in.
"""
from __future__ import annotations

import numpy as np
from PySide6.QtGui import QColor

from explorer.app.panels.model_map import ModelMapPanel
from explorer.app.state.session import Session
from tests.app.shared_window import make
from tests.app.test_model_map import bundled

SCALE = 2.0


def pixels(image) -> np.ndarray:
    """(H, W, 3) of a QImage."""
    image = image.convertToFormat(image.Format.Format_RGB888)
    data = np.frombuffer(image.constBits(), np.uint8, image.bytesPerLine() * image.height())
    return data.reshape(image.height(), image.bytesPerLine())[:, :image.width() * 3].reshape(
        image.height(), image.width(), 3).copy()                # the QImage's memory goes with it


def test_no_line_crosses_a_shape_label_and_no_label_lies_over_a_box(qtbot):
    session = Session()
    panel = make(qtbot, session, ModelMapPanel)
    session.set_model(bundled("shakespeare-gqa")[1])
    qtbot.waitUntil(lambda: bool(panel.edges))
    picture = pixels(panel.image(SCALE))
    origin = panel.scene.sceneRect().topLeft()
    labelled = [e for e in panel.edges if e.label is not None]
    assert len(labelled) >= 10
    struck, covered = [], []
    for edge in labelled:
        line = np.array(QColor(edge.pen().color()).getRgb()[:3])
        rect = edge.label.sceneBoundingRect().adjusted(1, 1, -1, -1)
        x0, y0 = int((rect.left() - origin.x()) * SCALE), int((rect.top() - origin.y()) * SCALE)
        x1, y1 = int((rect.right() - origin.x()) * SCALE), int((rect.bottom() - origin.y()) * SCALE)
        inside = picture[y0:y1, x0:x1].astype(int)
        if (np.abs(inside - line).max(axis=2) < 40).sum() > 2:
            struck.append(edge.edge.label)
        covered += [(edge.edge.label, box.node.label) for box in panel.items.values()
                    if rect.intersects(box.sceneBoundingRect())]
    assert not struck, f"lines run through the labels of {struck}"
    assert not covered, covered
