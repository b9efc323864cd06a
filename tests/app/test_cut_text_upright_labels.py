"""An upright (rotated) key label of a map is drawn whole, or elided with "…" after whole characters: never cut
mid-glyph by its box, on screen or in an export's larger font (issue 22: the attention map's keys read
"<0xE6><0:" at 1366 px and in PNG exports). Each label's drawn text is measured against the box it is drawn in."""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
import pytest
from PySide6.QtGui import QFontMetricsF, QImage, QPainter
from PySide6.QtWidgets import QApplication

from explorer.app.widgets.token_labels import tick_labels
from explorer.drawing.heatmap import Heatmap
from explorer.drawing.heatmap_axes import scaled_px

TOKENS = ["<0xE6><0x97><0xA5>", "<0xE6>", "東京は日本の首都です", "WWWWWWWWWWWWWW", "␣Mary", "The", "<0xF0><0x9F>",
          "␣Ångström", "MMMMMMMM"]


class Recording(QPainter):
    """A painter that keeps every text it is asked to draw in a box: (box, text, font)."""

    def __init__(self, device) -> None:
        super().__init__(device)
        self.texts = []

    def drawText(self, *args):
        if len(args) == 3 and hasattr(args[0], "width"):
            self.texts.append((args[0], args[2], self.font()))
        return super().drawText(*args)


def drawn_labels(axis) -> list:
    image = QImage(int(axis.width()) + 1, int(axis.height()) + 1, QImage.Format.Format_ARGB32)
    image.fill(0)
    painter = Recording(image)
    specs = axis.generateDrawSpecs(painter)
    axis.drawPicture(painter, *specs)
    painter.end()
    return painter.texts


@pytest.mark.parametrize("scale", [1.0, 1.6], ids=["screen", "export-font"])
def test_upright_key_labels_are_whole_or_elided_at_a_character(qtbot, scale):
    labels = tick_labels(TOKENS)
    view = pg.GraphicsLayoutWidget()
    qtbot.addWidget(view)
    heatmap = Heatmap(view.ci, colorbar=False, axes=("left", "top"))
    axis = heatmap.axes["top"]
    if scale != 1.0:
        axis.set_font(scaled_px(QApplication.font(), scale))           # as an export's figure sets it
    heatmap.set_matrix(np.eye(len(labels)), (0, 1), labels, labels)
    view.resize(int(700 * scale), int(700 * scale))
    view.show()
    qtbot.waitExposed(view)
    qtbot.wait(50)
    drawn = drawn_labels(axis)
    assert axis.upright and len(drawn) == len(labels), drawn
    for (box, text, font), label in zip(drawn, labels):
        width = QFontMetricsF(font).horizontalAdvance(text)
        assert width <= box.width() + 0.5, f"{text!r} ({width:.1f} px) is cut by its {box.width():.1f} px box"
        assert text == label or (text.endswith("…") and label.startswith(text[:-1]) and len(text) > 1), \
            f"{label!r} drawn as {text!r}"
