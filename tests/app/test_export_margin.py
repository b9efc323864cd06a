"""Every exported figure keeps a band of bare background on all four sides, and fills the image inside it.

Read from the pixels of the written files: a PNG as written, an SVG as Qt's SVG renderer draws it. Before,
the colour bar's end label stood half a line past the layout's edge (2 px from the bottom of a 640 × 480
head at twice the text size), the SVG grid touched its left edge, and a 400 × 300 grid whose title was wider
than the image was drawn shrunk into the PNG's top half.
"""
from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import QSize
from PySide6.QtGui import QColor, QImage, QPainter
from PySide6.QtSvg import QSvgRenderer

from explorer.drawing import export
from tests.app.synthetic_trace import build_trace

BAND_PX = 4                  # the outer band that must be background only
FILLED_SHARE = 0.8           # the content spans at least this share of the image each way
TOLERANCE = 8                # a channel this close to the background's is background


@pytest.fixture(scope="module")
def trace():
    return build_trace(n_layers=2, n_heads=3, prompt_len=40, steps=2)


def pixels(path, size) -> np.ndarray:
    """The written image as (H, W, 3) RGB: a PNG as it is, an SVG drawn by QSvgRenderer onto magenta, so that
    anything the SVG leaves unpainted is not taken for background."""
    if path.suffix == ".svg":
        image = QImage(QSize(*size), QImage.Format.Format_RGB888)
        image.fill(QColor("magenta"))
        painter = QPainter(image)
        QSvgRenderer(str(path)).render(painter)
        painter.end()
    else:
        image = QImage(str(path)).convertToFormat(QImage.Format.Format_RGB888)
    assert (image.width(), image.height()) == tuple(size)
    rows = np.frombuffer(image.constBits(), np.uint8, image.bytesPerLine() * image.height())
    return rows.reshape(image.height(), image.bytesPerLine())[:, : 3 * image.width()].reshape(
        image.height(), image.width(), 3).astype(int)


def content(picture: np.ndarray, background) -> np.ndarray:
    """True where a pixel is not the background."""
    return np.any(np.abs(picture - np.asarray(background)) > TOLERANCE, axis=2)


CASES = [   # (layer, head, size, text scale, theme)
    (0, 1, (640, 480), 2.0, "light"),
    (0, 1, (640, 480), 1.0, "dark"),
    (0, 1, (400, 300), 2.0, "light"),
    (0, "all", (640, 480), 2.0, "light"),
    (0, "all", (1600, 1200), 1.0, "light"),
    ("all", "all", (400, 300), 1.0, "light"),
    ("all", "all", (640, 480), 2.0, "dark"),
    ("all", "all", (1600, 1200), 2.0, "light"),
]
BACKGROUNDS = {"light": (255, 255, 255), "dark": None}      # dark: whatever the corner is, not white


@pytest.mark.parametrize("suffix", [".png", ".svg"])
@pytest.mark.parametrize("layer, head, size, text_scale, theme", CASES)
def test_a_band_of_background_on_every_side_and_the_figure_fills_the_rest(qtbot, tmp_path, trace, suffix, layer,
                                                                          head, size, text_scale, theme):
    path = export.export_attention(trace, tmp_path / f"figure{suffix}", layer, head, size=size, theme=theme,
                                   text_scale=text_scale)
    picture = pixels(path, size)
    background = picture[0, 0]
    if BACKGROUNDS[theme] is not None:
        assert tuple(background) == BACKGROUNDS[theme]
    else:
        assert max(background) < 80                 # a dark background
    drawn = content(picture, background)
    width, height = size
    for side, band in {"top": drawn[:BAND_PX], "bottom": drawn[-BAND_PX:],
                       "left": drawn[:, :BAND_PX], "right": drawn[:, -BAND_PX:]}.items():
        assert not band.any(), f"{side}: {int(band.sum())} pixels of content in the outer {BAND_PX} px"
    rows, cols = np.flatnonzero(drawn.any(axis=1)), np.flatnonzero(drawn.any(axis=0))
    assert rows[-1] - rows[0] >= FILLED_SHARE * height, "the figure does not fill the image's height"
    assert cols[-1] - cols[0] >= FILLED_SHARE * width, "the figure does not fill the image's width"
    assert drawn[BAND_PX:-BAND_PX, BAND_PX:-BAND_PX].mean() > 0.1     # maps, not only a frame
