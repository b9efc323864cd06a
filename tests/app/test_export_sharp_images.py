"""A panel exported "as shown on screen" to SVG draws its heat maps' cells sharp in any reader: a raster drawn scaled
up is embedded as blocks of whole pixels, one block a cell (drive29: the head atlas's 9 x 30 map was a 9 x 30 PNG
under a 22 x 10 matrix, which librsvg smoothed into blobs). A raster drawn at its own size is left as it was."""
from __future__ import annotations

import base64
import re

import numpy as np
import pyqtgraph as pg
from PySide6.QtGui import QImage
from PySide6.QtWidgets import QVBoxLayout, QWidget

from explorer.drawing import export

IMAGES = re.compile(r'transform="matrix\(([^)]*)\)"[^>]*>\s*<image [^>]*?width="(\d+)" height="(\d+)"[^>]*?'
                    r'xlink:href="data:image/png;base64,([^"]+)"')


def embedded(svg: str) -> list[tuple[float, tuple[int, int], np.ndarray]]:
    """(the matrix's larger scale, the size the image is drawn at in its own units, its pixels) of each image."""
    found = []
    for matrix, width, height, data in IMAGES.findall(svg):
        a, b, c, d = (float(v) for v in matrix.split(",")[:4])
        image = QImage.fromData(base64.b64decode(data), "PNG").convertToFormat(QImage.Format.Format_ARGB32)
        pixels = np.frombuffer(image.constBits(), np.uint32, image.bytesPerLine() // 4 * image.height())
        pixels = pixels.reshape(image.height(), -1)[:, :image.width()].copy()
        found.append((max(np.hypot(a, b), np.hypot(c, d)), (int(width), int(height)), pixels))
    return found


def test_a_scaled_map_is_embedded_as_blocks_of_its_cells(qtbot, tmp_path, monkeypatch):
    panel = QWidget()
    qtbot.addWidget(panel)
    view = pg.GraphicsLayoutWidget()
    QVBoxLayout(panel).addWidget(view)
    plot = view.addPlot()
    plot.addItem(pg.ImageItem(np.random.default_rng(0).random((9, 30))))
    panel.resize(320, 420)
    panel.show()
    qtbot.waitExposed(panel)
    with monkeypatch.context() as plain:
        plain.setattr(export, "sharp_images", lambda svg: svg)
        before = embedded(export.save_widget(panel, tmp_path / "plain.svg").read_text(encoding="utf-8"))
    after = embedded(export.save_widget(panel, tmp_path / "sharp.svg").read_text(encoding="utf-8"))
    assert len(before) == len(after) and any(scale >= 2 for scale, _, _ in before)
    for (scale, drawn, cells), (_, drawn_after, pixels) in zip(before, after):
        assert drawn_after == drawn, "the image is drawn where and as large as before"
        if scale < 2:
            np.testing.assert_array_equal(pixels, cells)
            continue
        block = pixels.shape[0] // cells.shape[0]
        assert block >= 2 and pixels.shape == (cells.shape[0] * block, cells.shape[1] * block)
        np.testing.assert_array_equal(pixels, np.repeat(np.repeat(cells, block, axis=0), block, axis=1))
