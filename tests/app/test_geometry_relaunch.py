"""A relaunch puts the window back where it was. On a bare X screen (no window manager, so no frame) a window
that filled the screen came back 25 px down and as much shorter: Qt's restoreGeometry keeps room above a
window for a title bar it guesses, which no window manager draws, leaving a strip of black screen.

Expectation: the window's own geometry before the quit, read back after the relaunch (a formula-free equality).
"""
from __future__ import annotations

import pytest
from PySide6.QtCore import QRect, QSettings

from explorer.app.start import launch
from explorer.app.thread.worker import ModelWorker
from explorer.app.window.main_window import MainWindow
from explorer.app.window.settings import AppSettings
from tests.app.fake_core import FakeCore
from tests.app.screen_fit import settle

pytestmark = pytest.mark.usefixtures("store_home")  # the store in the test's folder


def launched(qtbot, tmp_path) -> MainWindow:
    settings = AppSettings(QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat))
    window = MainWindow(worker=ModelWorker(FakeCore().api()), settings=settings,
                        autosave_path=tmp_path / "autosave.json", catalog=lambda: [])
    qtbot.addWidget(window)
    launch.show_sized_to_screen(window, settings)
    settle(0.5)
    return window


def test_a_relaunch_puts_the_window_where_it_was(qtbot, tmp_path, screen):
    first = launched(qtbot, tmp_path)
    available = QRect(0, 0, screen.width(), screen.height())
    assert first.frameGeometry() == available          # the first start fills the screen
    first.close()
    settle(0.2)
    again = launched(qtbot, tmp_path)
    try:
        assert again.frameGeometry() == available, \
            f"relaunched at {again.frameGeometry().getRect()}, was {available.getRect()}"
    finally:
        again.close()


def test_a_damaged_saved_place_is_not_taken(tmp_path):
    settings = AppSettings(QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat))
    for damaged in ("", "1,2,3", "a,b,c,d", "0,0,999999999,999999999", "0,0,-5,10", "0,0,1366x768"):
        settings.q.setValue("window/place", damaged)
        assert settings.window_place() is None, damaged
    settings.q.setValue("window/place", "10,20,1300,700")
    assert settings.window_place() == QRect(10, 20, 1300, 700)
