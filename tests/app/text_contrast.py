"""Where a figure's text is, and how readable it is in the pixels of a written file.

`label_rects(view)` lists the scene rectangles of a pyqtgraph figure's text: its
titles (LabelItem), and every visible axis that draws tick values or a label.
`glyph_contrast(image, rect)` finds the background of a rectangle (its most common
colour), takes the pixels that differ from it (the glyphs, anti-aliased edges too),
and returns the WCAG contrast of the glyphs' ink against that background: the median
over the glyph pixels furthest from the background (the upper third), so that one
dark pixel never passes for readable text and the soft edges of a glyph do not fail it.
`rendered(path, size)` reads a PNG, or draws an SVG with QSvgRenderer on white paper.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pyqtgraph as pg
import pytest
from PySide6.QtCore import QRectF
from PySide6.QtGui import QColor, QImage, QPainter, QPalette
from PySide6.QtWidgets import QApplication

GLYPH_DISTANCE = 12          # a pixel this far (0-255, any channel) from the background is part of a glyph
MIN_GLYPH_PIXELS = 12
PLOT_MARGIN = 3             # an SVG reader smooths images over a pixel or two past their edge


def label_rects(view) -> list[tuple[str, list[float]]]:
    """(what, [x, y, w, h]) for each piece of text of a GraphicsView's scene, in scene pixels, and
    ("plot", rect) for every ViewBox (a colour bar's too), whose pixels are data, not text."""
    rects = [("plot", _rect(item.getViewBox().sceneBoundingRect())) for item in view.scene().items()
             if isinstance(item, pg.PlotItem) and item.isVisible()]
    for item in view.scene().items():
        if not item.isVisible() or item.sceneBoundingRect().isEmpty():
            continue
        if isinstance(item, pg.LabelItem) and item.text:
            rects.append((f"title {item.text[:30]}", _rect(item.sceneBoundingRect())))
        elif isinstance(item, pg.AxisItem) and (item.style.get("showValues") or item.label.isVisible()):
            if item.orientation in ("left", "right") and item.width() < 20:
                continue                                    # a frame line without values
            rects.append((f"axis {item.orientation}", _rect(item.sceneBoundingRect())))
    return rects


def _rect(r: QRectF) -> list[float]:
    return [r.x(), r.y(), r.width(), r.height()]


def rendered(path: Path, size: tuple[int, int]) -> np.ndarray:
    """(H, W, 3) uint8 of a PNG, or of an SVG drawn over white paper at `size`."""
    path = Path(path)
    if path.suffix == ".svg":
        from PySide6.QtSvg import QSvgRenderer

        renderer = QSvgRenderer(str(path))
        assert renderer.isValid(), f"{path} is not a valid SVG"
        image = QImage(size[0], size[1], QImage.Format.Format_RGB32)
        image.fill(QColor("white"))
        painter = QPainter(image)
        renderer.render(painter)
        painter.end()
    else:
        image = QImage(str(path))
    image = image.convertToFormat(QImage.Format.Format_RGB888)
    width, height = image.width(), image.height()
    data = np.frombuffer(image.constBits(), np.uint8, count=image.bytesPerLine() * height)
    return data.reshape(height, image.bytesPerLine())[:, : 3 * width].reshape(height, width, 3).copy()


def luminance(rgb: np.ndarray) -> np.ndarray:
    """WCAG relative luminance of (..., 3) uint8 colours."""
    c = rgb.astype(np.float64) / 255.0
    c = np.where(c <= 0.03928, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)
    return c @ np.array([0.2126, 0.7152, 0.0722])


def contrast(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    la, lb = luminance(a), luminance(b)
    return (np.maximum(la, lb) + 0.05) / (np.minimum(la, lb) + 0.05)


def background_of(pixels: np.ndarray) -> np.ndarray:
    """The most common colour of (N, 3) pixels."""
    colours, counts = np.unique(pixels.reshape(-1, 3), axis=0, return_counts=True)
    return colours[counts.argmax()]


def text_pixels(image: np.ndarray, rect, plots=()) -> np.ndarray:
    """(N, 3): the pixels of rect outside every plot rectangle (ticks reach into the views)."""
    height, width = image.shape[:2]
    keep = np.zeros((height, width), bool)
    x, y, w, h = (int(round(v)) for v in rect)
    keep[max(0, y): y + h, max(0, x): x + w] = True
    for px, py, pw, ph in plots:
        keep[max(0, int(py) - PLOT_MARGIN): int(py + ph) + PLOT_MARGIN + 1,
             max(0, int(px) - PLOT_MARGIN): int(px + pw) + PLOT_MARGIN + 1] = False
    return image[keep]


def glyph_contrast(image: np.ndarray, rect, plots=()) -> tuple[float, int]:
    """(contrast of the glyphs against their background, how many glyph pixels) inside rect."""
    patch = text_pixels(image, rect, plots)
    if patch.size == 0:
        return 0.0, 0
    background = background_of(patch)
    distance = np.abs(patch.astype(int) - background.astype(int)).max(axis=1)
    glyphs = patch[distance > GLYPH_DISTANCE]
    if len(glyphs) < MIN_GLYPH_PIXELS:
        return 0.0, len(glyphs)
    ratios = np.sort(contrast(glyphs, background[None, :]))
    return float(np.median(ratios[-max(1, len(ratios) // 3):])), len(glyphs)


def paper_luminance(image: np.ndarray) -> float:
    """The luminance of the figure's background: the most common colour of its border."""
    border = np.concatenate([image[:4].reshape(-1, 3), image[-4:].reshape(-1, 3),
                             image[:, :4].reshape(-1, 3), image[:, -4:].reshape(-1, 3)])
    return float(luminance(background_of(border)))


@pytest.fixture
def restore_palette():
    """Put the application's palette and style back after a test that switches the theme, and leave
    the light theme applied (pyqtgraph's own colours follow it)."""
    from explorer.app.window.theme import apply_theme

    app = QApplication.instance()
    palette, style = QPalette(app.palette()), app.style().name()
    yield app
    app.setStyle(style)
    app.setPalette(palette)
    apply_theme(app, "light")
