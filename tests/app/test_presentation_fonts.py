"""Plot titles and exported figures' text follow the application's font, in points or in pixels.

A heat map's title was 11 pt whatever the font (View ▸ Presentation makes the font 1.4 times larger, and
the map titles stayed small), and an export's text was scaled from sizes assumed in points: a title
sized in pixels stopped the export, and tick labels were 12 px times the scale whatever the font.
"""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
import pytest
from PySide6.QtGui import QFont, QFontInfo, QTextCursor
from PySide6.QtWidgets import QApplication

from explorer.drawing.figures import scale_fonts
from explorer.drawing.heatmap import Heatmap

APP_PX = 22                 # an application font given in pixels, larger than any default


def drawn_px(text_item) -> int:
    """The pixel size of the first character a rich text item draws."""
    cursor = QTextCursor(text_item.document())
    cursor.movePosition(QTextCursor.MoveOperation.NextCharacter)
    return QFontInfo(cursor.charFormat().font()).pixelSize()


@pytest.fixture
def pixel_font(qapp):
    """The application's font in pixels (APP_PX) while the test runs."""
    before = QApplication.font()
    font = QFont(before)
    font.setPixelSize(APP_PX)
    QApplication.setFont(font)
    yield font
    QApplication.setFont(before)


def heat_map_figure(title: str) -> tuple[pg.GraphicsLayoutWidget, Heatmap]:
    figure = pg.GraphicsLayoutWidget(size=(600, 500))
    heatmap = Heatmap(figure.ci)
    heatmap.set_matrix(np.eye(4, dtype=np.float32), (0.0, 1.0), list("abcd"), list("abcd"))
    heatmap.plot.setTitle(title)
    return figure, heatmap


def test_a_heat_maps_title_is_larger_than_the_application_font_in_pixels(pixel_font):
    figure, heatmap = heat_map_figure("layer 0, head 0")
    try:
        title = drawn_px(heatmap.plot.titleLabel.item)
        assert title > APP_PX, f"the title is {title} px beside text of {APP_PX} px"
    finally:
        figure.deleteLater()


def test_an_exports_text_scales_from_the_sizes_drawn_in_any_unit(pixel_font):
    figure, heatmap = heat_map_figure("layer 0, head 0")
    caption = figure.addLabel("a caption sized in pixels", row=2, col=0, size="15px")
    try:
        title = drawn_px(heatmap.plot.titleLabel.item)
        scale_fonts(figure, 2.0)
        assert drawn_px(caption.item) == 30, "a 15 px caption at twice the size"
        assert abs(drawn_px(heatmap.plot.titleLabel.item) - 2 * title) <= 1, "the title at twice its size"
        for side in ("left", "top"):
            tick_font = heatmap.plot.getAxis(side).style["tickFont"]
            assert QFontInfo(tick_font).pixelSize() == 2 * APP_PX, f"{side} tick labels at twice the text's size"
    finally:
        figure.deleteLater()
