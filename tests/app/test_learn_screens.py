"""Every Learn stop walked on a bare 1366x768 and 1920x1080 screen (emulated, no window manager to cap the
window): after Show me, the window still fits the screen, the stop's panel is in front and wholly inside
the window, and the Learn column shows the stop's text, unclipped, with room to read it.

The expectation is geometry against the screen's size (screen_fit), never a size copied from the layout.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from PySide6.QtCore import QPoint, QRect, QSettings
from PySide6.QtGui import QTextDocument
from PySide6.QtWidgets import QApplication, QMessageBox

from explorer.app.panels.base import formula_html
from explorer.app.window.learn_placement import open_learn
from explorer.app.window.main_window import MainWindow
from explorer.app.window.settings import AppSettings
from tests.app.screen_fit import assert_fits, settle

ROOT = Path(__file__).resolve().parents[2]
STOPS = json.loads((ROOT / "resources" / "learn" / "stops.json").read_text())["stops"]
MIN_TEXT_LINES = 6           # a stop's title and the first lines of its text, read without scrolling
MIN_TEXT_WIDTH_PX = 240      # a column narrower than this breaks a formula a word at a time


@pytest.fixture
def walked(qtbot, tmp_path, monkeypatch, screen):
    """A window on the real core (bundled models only), laid out for the emulated `screen`, Learn open."""
    monkeypatch.setenv("TRANSFORMER_EXPLORER_HOME", str(tmp_path / "store"))
    warnings = []
    monkeypatch.setattr(QMessageBox, "warning", lambda parent, title, text, *a: warnings.append(text))
    monkeypatch.setattr(QMessageBox, "question", lambda *a: QMessageBox.StandardButton.No)
    settings = AppSettings(QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat))
    window = MainWindow(settings=settings, autosave_path=tmp_path / "autosave.json", catalog=lambda: [])
    window.show()
    window.warnings = warnings
    settle(0.3)
    yield window, screen
    window.close()


def inside_window(window, widget) -> bool:
    """Whether `widget`'s whole rectangle lies within the window's (nothing of it cut off at an edge)."""
    top_left = widget.mapTo(window, QPoint(0, 0))
    return window.rect().contains(QRect(top_left, widget.size()))


def text_problems(panel, window) -> list[str]:
    """What keeps the stop's text from being read in the Learn column: the dock out of sight or cut at the
    window's edge, a text area too small, the page scrolled away from the title."""
    browser, dock = panel.text, window.learn_dock
    problems = []
    if dock.visibleRegion().isEmpty() or not inside_window(window, dock):
        problems.append(f"the Learn column {dock.geometry().getRect()} is hidden or cut by the window")
    viewport = browser.viewport()
    lines = viewport.height() / browser.fontMetrics().lineSpacing()
    if lines < MIN_TEXT_LINES or viewport.width() < MIN_TEXT_WIDTH_PX:
        problems.append(f"the text area is {viewport.width()}x{viewport.height()} px ({lines:.1f} lines)")
    if browser.verticalScrollBar().value() != 0:
        problems.append("the page is not scrolled to its title")
    title = QTextDocument()
    title.setHtml(formula_html(panel.stop.title))       # drawn with its scripts, as the page draws it
    if title.toPlainText() not in browser.toPlainText():
        problems.append("the page does not show the stop's title")
    return problems


def test_every_stop_shown_fits_the_screen_with_its_text_and_panel_in_view(qtbot, walked):
    window, screen = walked
    panel = open_learn(window)
    app = QApplication.instance()
    for index, stop in enumerate(STOPS):
        panel.go_to(index)
        with qtbot.waitSignal(panel.ensure_tour().reached, timeout=180_000):
            panel.show_button.click()
        qtbot.waitUntil(lambda: not window.worker.busy and window.controller.loading is None, timeout=60_000)
        settle(0.3)
        app.processEvents()
        when = f"stop {index + 1} ({stop['id']}) on {screen.width()}x{screen.height()}"
        assert_fits(window, screen, when, plots=False)
        shown = window.docks[stop["state"]["panel"]]
        assert not shown.visibleRegion().isEmpty(), f"{when}: its panel is not in front"
        assert inside_window(window, shown), f"{when}: its panel {shown.geometry().getRect()} is cut by the window"
        assert not text_problems(panel, window), f"{when}: " + "; ".join(text_problems(panel, window))
    assert not window.warnings
