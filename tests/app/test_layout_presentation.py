"""View ▸ Presentation: larger text and the panel in focus over the whole window, fitting a 1366x768
projector with legible plots; off again, the text and the layout come back."""
from __future__ import annotations

import pytest
from PySide6.QtGui import QFontInfo
from PySide6.QtWidgets import QApplication, QMessageBox

from explorer.app.window.presentation import FONT_SCALE
from tests.app.layout_probe import open_window
from tests.app.screen_fit import assert_fits, settle


@pytest.fixture
def window(qapp, tmp_path, screen, monkeypatch):
    monkeypatch.setattr(QMessageBox, "warning", lambda *a: None)
    font = QApplication.font()
    window = open_window(str(tmp_path / "settings.ini"))
    settle(0.8)
    yield window
    window.close()
    QApplication.setFont(font)


def presentation(window):
    return next(a for a in window.menus.view.actions() if a.text().replace("&", "").startswith("Presentation"))


def test_presentation_shows_the_focused_panel_in_larger_text_and_fits(window, screen):
    before = {name: dock.size() for name, dock in window.docks.items() if dock.isVisible()}
    pixels = QFontInfo(window.font()).pixelSize()
    window.docks["next_token"].widget().setFocus()
    presentation(window).trigger()
    settle(0.6)
    assert [name for name, dock in window.docks.items() if dock.isVisible()] == ["next_token"]
    assert QFontInfo(window.font()).pixelSize() >= round(pixels * FONT_SCALE) - 1
    assert_fits(window, screen, "in presentation")
    window.docks["next_token"].hide()                 # any panel: attention's plots too
    window.docks["attention"].show()
    settle(0.4)
    assert_fits(window, screen, "attention presented")
    window.docks["attention"].hide()
    window.docks["next_token"].show()
    presentation(window).trigger()
    settle(0.6)
    assert QFontInfo(window.font()).pixelSize() == pixels
    after = {name: dock.size() for name, dock in window.docks.items() if dock.isVisible()}
    assert set(after) == set(before)
    assert_fits(window, screen, "after presentation")
