"""A panel's own export is a picture of the panel as it looks on screen: its menu text and tip say so and
point to View ▸ Presentation for larger text. Measured on the written PNG: File ▸ Export Figure Text Size
leaves the picture unchanged, and Presentation makes its text about FONT_SCALE times as tall."""
from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtGui import QImage
from PySide6.QtWidgets import QApplication

from explorer.app.figures import export_dialogs
from explorer.app.window.presentation import FONT_SCALE
from tests.app.layout_probe import open_window
from tests.app.screen_fit import settle

PANEL = "tokens"             # a panel whose export is the default one (a picture of the panel)


@pytest.fixture
def window(qapp, tmp_path, monkeypatch):
    font = QApplication.font()
    window = open_window(str(tmp_path / "settings.ini"))
    window.docks[PANEL].raise_()
    settle(0.5)
    yield window
    window.close()
    QApplication.setFont(font)


def picture(path) -> np.ndarray:
    image = QImage(str(path)).convertToFormat(QImage.Format.Format_RGB888)
    rows = np.frombuffer(image.constBits(), np.uint8, image.bytesPerLine() * image.height())
    return rows.reshape(image.height(), image.bytesPerLine())[:, : 3 * image.width()].reshape(
        image.height(), image.width(), 3).copy()


def line_heights(image: np.ndarray) -> list[int]:
    """Heights of the runs of rows holding dark ink (lines of text and rules), top to bottom."""
    ink = (image.max(axis=-1) < 110).any(axis=1)
    edges = np.flatnonzero(np.diff(np.concatenate(([0], ink.astype(int), [0]))))
    return [int(end - start) for start, end in zip(edges[::2], edges[1::2])]


def saved(window, monkeypatch, path) -> np.ndarray:
    panel = window.docks[PANEL].widget()
    monkeypatch.setattr(export_dialogs, "ask_path", lambda *a, **k: path)
    action = panel.export_actions()[0]
    action.trigger()
    assert path.exists()
    return picture(path)


def test_the_menu_says_it_is_the_panel_as_shown_and_where_larger_text_comes_from(window):
    action = window.docks[PANEL].widget().export_actions()[0]
    assert "as shown on screen" in action.text()
    assert "Export Figure Text Size" in action.toolTip() and "Presentation" in action.toolTip()


def test_the_figure_text_size_leaves_the_picture_as_shown(window, monkeypatch, tmp_path):
    window.settings.figure_text_scale = 1.0
    normal = saved(window, monkeypatch, tmp_path / "normal.png")
    window.settings.figure_text_scale = 2.0
    assert np.array_equal(saved(window, monkeypatch, tmp_path / "largest.png"), normal)


def test_presentation_makes_the_pictures_text_larger(window, monkeypatch, tmp_path):
    before = saved(window, monkeypatch, tmp_path / "before.png")
    window.docks[PANEL].widget().setFocus()
    next(a for a in window.menus.view.actions() if a.text().replace("&", "").startswith("Presentation")).trigger()
    settle(0.6)
    after = saved(window, monkeypatch, tmp_path / "after.png")
    text_before = [h for h in line_heights(before) if h >= 6]         # lines of text, not 1-2 px rules
    text_after = [h for h in line_heights(after) if h >= 6]
    ratio = np.median(text_after) / np.median(text_before)
    assert abs(ratio - FONT_SCALE) <= 0.2 * FONT_SCALE, (text_before, text_after)
