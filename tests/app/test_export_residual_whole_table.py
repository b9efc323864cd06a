"""Residual stream ▸ Export … as shown on screen holds every layer (drive20 m16): a grab of the panel cut SmolLM2's
30-layer table at L24, with its scroll bars in the picture. The picture is taken with every table of the panel whole.

Expectation, from the model's config and the picture alone: the written PNG's table has one column per layer of
the model (num_hidden_layers), counted as the grid lines the table draws between its columns, and no scroll bar
is left; the panel on screen is as it was before.
"""
from __future__ import annotations

import numpy as np
from PySide6.QtGui import QImage

from explorer.app.figures import export_dialogs
from tests.app.deep_residual import deep_llama, residual_stream_shown  # noqa: F401  (deep_llama: the fixture)


def rgb(image: QImage) -> np.ndarray:
    image = image.convertToFormat(QImage.Format.Format_RGB888)
    rows = np.frombuffer(image.constBits(), np.uint8, image.bytesPerLine() * image.height())
    return rows.reshape(image.height(), image.bytesPerLine())[:, : 3 * image.width()].reshape(
        image.height(), image.width(), 3).copy()


def grid_lines(picture: np.ndarray) -> tuple[int, int]:
    """(rows, columns) of the table in `picture`, counted as the grid lines a table draws under each row and right
    of each column: its grid colour is the one of most full-width lines (rows of one darker colour, not the
    frame's); a column's line runs through every row, from the first row's line to the last's."""
    height, width, _ = picture.shape
    lines: dict[tuple, list[int]] = {}
    for y in range(height):
        colours, counts = np.unique(picture[y], axis=0, return_counts=True)
        if counts.max() > 0.9 * width and colours[counts.argmax()].max() < 230:
            lines.setdefault(tuple(colours[counts.argmax()]), []).append(y)
    colour, ys = max(lines.items(), key=lambda item: len(item[1]))
    band = picture[ys[0] + 1: ys[-1]]
    through = np.flatnonzero((band == np.array(colour)).all(axis=2).all(axis=0))
    columns = len(np.split(through, np.flatnonzero(np.diff(through) > 1) + 1)) if through.size else 0
    return len(ys), columns


def test_the_residual_pictures_table_holds_every_layer(qtbot, deep_llama, tmp_path, monkeypatch):  # noqa: F811
    n_layers = deep_llama[2]
    panel = residual_stream_shown(qtbot, deep_llama, (1000, 420))
    qtbot.wait(300)
    assert panel.table.horizontalScrollBar().maximum() > 0, "the test's layers fit the panel: nothing to show"
    before, scrolled = panel.size(), panel.table.horizontalScrollBar().value()
    path = tmp_path / "residual.png"
    monkeypatch.setattr(export_dialogs, "ask_path", lambda *a, **k: path)
    next(a for a in panel.export_actions() if "as shown on screen" in a.text()).trigger()
    qtbot.waitUntil(path.exists, timeout=10000)
    rows, columns = grid_lines(rgb(QImage(str(path))))
    assert columns == n_layers, f"the picture's table has {columns} of the model's {n_layers} layers"
    assert rows == panel.table.rowCount(), f"{rows} of the table's {panel.table.rowCount()} rows"
    assert panel.size() == before and panel.table.horizontalScrollBar().value() == scrolled   # on screen as it was
