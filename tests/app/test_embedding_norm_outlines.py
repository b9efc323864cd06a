"""The Embeddings panel's ‖E[id]‖₂ bars stay blue where they are thin: at 256 tokens each bar was outlined in the
foreground colour, 1.5 px apart, and the outlines drew a solid dark mass over the fill (drive21 m15). Measured on the
panel's pixels: the share of the bars' region drawn in the outline's colour against the fill's."""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF

from explorer.app.panels import EmbeddingsPanel
from explorer.app.state.session import Session
from tests.app.synthetic_trace import build_trace

FILL = np.array(pg.mkColor("#3b7dd8").getRgb()[:3], dtype=float)


def bar_pixels(qtbot, n_tokens: int) -> tuple[int, int]:
    """(pixels in the fill's colour, pixels in the outline's) inside the bars' plot, drawn at `n_tokens`."""
    session = Session()
    session.set_token_display(lambda token_id: f"tok{token_id}")
    panel = EmbeddingsPanel(session)
    qtbot.addWidget(panel)
    panel.resize(700, 460)
    panel.show()
    qtbot.waitExposed(panel)
    session.set_trace(build_trace(prompt_len=n_tokens, max_positions=max(64, n_tokens)))
    qtbot.waitUntil(lambda: panel.norm_bars is not None and not panel.drawing, timeout=30_000)
    qtbot.wait(100)
    box = panel.norm_plot.getViewBox()
    rect = box.mapRectToScene(box.boundingRect())
    origin = panel.view.mapTo(panel, panel.view.mapFromScene(rect.topLeft()))
    image = panel.grab().toImage()
    pixels = np.array([[image.pixelColor(x, y).getRgb()[:3]
                        for x in range(origin.x() + 2, origin.x() + int(rect.width()) - 2)]
                       for y in range(origin.y() + 2, origin.y() + int(rect.height()) - 2)], dtype=float)
    outline = np.array(pg.mkColor(pg.getConfigOption("foreground")).getRgb()[:3], dtype=float)
    near = lambda colour: int((np.abs(pixels - colour).sum(axis=2) < 60).sum())     # noqa: E731
    assert isinstance(rect, QRectF) and pixels.size, "the bars' plot is not laid out"
    return near(FILL), near(outline)


def test_thin_bars_are_drawn_blue_not_as_a_mass_of_outlines(qtbot):
    fill, outline = bar_pixels(qtbot, 256)
    assert fill > 0
    assert outline < 0.1 * fill, f"{outline} outline pixels against {fill} of the fill"


def test_bars_with_room_keep_their_outline(qtbot):
    fill, outline = bar_pixels(qtbot, 8)
    assert fill > 0 and outline > 0
