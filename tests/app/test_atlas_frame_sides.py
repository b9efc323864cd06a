"""The Head atlas frames the selected head with all four sides in sight, at the map's edge too: L0.H0 on the MLA
model was framed by a thin left and bottom edge alone at 1366x768, its top and left lost to the view's clip and
frame line (drive21 m7). Checked on the view's pixels: the highlight colour on each side of the cell."""
from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import QPointF, QSize
from PySide6.QtGui import QImage

from explorer.drawing.heatmap import HIGHLIGHT
from tests.app.journey import BUNDLED, journey_in_a_window

pytestmark = pytest.mark.usefixtures("store_home")  # the store in the test's folder


def rgb(image: QImage) -> np.ndarray:
    image = image.convertToFormat(QImage.Format.Format_RGB888)
    rows = np.frombuffer(image.constBits(), np.uint8, image.bytesPerLine() * image.height())
    return rows.reshape(image.height(), image.bytesPerLine())[:, : 3 * image.width()].reshape(
        image.height(), image.width(), 3).copy()


def test_the_selected_head_at_the_maps_corner_is_framed_on_all_four_sides(qtbot, tmp_path, monkeypatch):
    with journey_in_a_window(qtbot, tmp_path, monkeypatch, QSize(1366, 768)) as journey:
        journey.open(BUNDLED / "shakespeare-mla", "To be, or not to be")
        panel = journey.raise_panel("atlas")
        journey.idle("scoring the heads")
        journey.window.session.select(layer=0, head=0)
        journey.idle("framing L0.H0")
        heatmap = panel.map
        assert heatmap.tile_box.isVisible()
        view = heatmap.plot.scene().views()[0]
        box = heatmap.plot.getViewBox()
        image = rgb(view.grab().toImage())
        ratio = view.devicePixelRatioF()
        corners = [view.mapFromScene(box.mapViewToScene(QPointF(x, y))) for x, y in ((-0.5, -0.5), (0.5, 0.5))]
        (left, top), (right, bottom) = ((round(c.x() * ratio), round(c.y() * ratio)) for c in corners)
        red = np.array(HIGHLIGHT.getRgb()[:3])
        near = (np.abs(image.astype(int) - red).sum(axis=-1) < 60)
        inner = 5                                                        # px in from the cell's edge
        sides = {"left": near[top + inner: bottom - inner, left: left + inner],
                 "right": near[top + inner: bottom - inner, right - inner: right],
                 "top": near[top: top + inner, left + inner: right - inner],
                 "bottom": near[bottom - inner: bottom, left + inner: right - inner]}
        for side, band in sides.items():
            # along most of the side, some pixel of its band is the highlight's colour
            along = band.any(axis=1) if side in ("left", "right") else band.any(axis=0)
            assert along.mean() > 0.8, f"the {side} side shows on {along.mean():.0%} of its length"
