"""A panel exported "as shown on screen" as SVG draws its plots' lines as lines in librsvg and ImageMagick.

Seen opening the window's exports of SmolLM2's Residual stream and Q / K / V: Qt writes a plot's line in the
plot's units under the view's matrix with vector-effect="non-scaling-stroke", which neither reader honours, so
the 2 px norms' lines came out as bands tens of pixels wide and the selected row's outline as a filled bar.
"""
from __future__ import annotations

import subprocess

import numpy as np
import pyqtgraph as pg
from PySide6.QtGui import QColor, QImage
from PySide6.QtWidgets import QVBoxLayout, QWidget

from explorer.drawing import export

READERS = {"rsvg-convert": lambda svg, png: ["rsvg-convert", str(svg), "-o", str(png)],
           "ImageMagick": lambda svg, png: ["convert", str(svg), str(png)]}
LINE = QColor("#1f77b4")


def line_pixels(path) -> int:
    image = QImage(str(path)).convertToFormat(QImage.Format.Format_RGB32)
    pixels = np.frombuffer(image.constBits(), dtype=np.uint32).reshape(image.height(), -1)[:, : image.width()]
    red, green, blue = (pixels >> 16) & 255, (pixels >> 8) & 255, pixels & 255
    return int(((abs(red - LINE.red()) < 40) & (abs(green - LINE.green()) < 40) & (abs(blue - LINE.blue()) < 40)).sum())


def test_a_plots_line_in_a_panels_svg_is_as_thin_as_in_its_png(qtbot, tmp_path):
    panel = QWidget()                                   # a panel holding a plot, as the Residual stream does
    layout = QVBoxLayout(panel)
    plot = pg.PlotWidget()
    layout.addWidget(plot)
    qtbot.addWidget(panel)
    panel.resize(600, 300)
    plot.plot(np.arange(30), np.linspace(0, 700, 30) ** 1.2 / 10, pen=pg.mkPen(LINE, width=2))   # 30 x 800 units
    panel.show()
    qtbot.waitExposed(panel)
    png, svg = tmp_path / "panel.png", tmp_path / "panel.svg"
    export.save_widget(panel, png)
    export.save_widget(panel, svg)
    drawn = line_pixels(png)
    assert drawn > 300, f"the PNG shows {drawn} pixels of the line"
    for reader, command in READERS.items():
        out = tmp_path / f"{reader}.png"
        subprocess.run(command(svg, out), check=True, timeout=120, capture_output=True)
        assert line_pixels(out) < 3 * drawn, f"{reader}: {line_pixels(out)} pixels of the line, the PNG's {drawn}"
