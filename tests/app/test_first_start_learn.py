"""Learn opens by itself on the first start of a fresh configuration, once: not on the next start, not in a
scripted run (--no-restore or TRANSFORMER_EXPLORER_NO_RESTORE=1, which screenshots use), and not in a window
a test builds. With it open, the window still fits a 1366x768 screen with legible plots."""
from __future__ import annotations

import pytest
from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QApplication, QMessageBox

from explorer.app.start import launch
from explorer.app.window.learn_placement import open_learn
from explorer.app.window.settings import AppSettings
from tests.app.layout_probe import open_window
from tests.app.screen_fit import SCREENS, assert_fits, emulated_screen, settle
from tests.app.window_helpers import prefilled

pytestmark = pytest.mark.usefixtures("store_home")  # the store in the test's folder


def learn_shown(window) -> bool:
    dock = getattr(window, "learn_dock", None)
    return dock is not None and not dock.isHidden()          # the window itself may be closed by now


def test_learn_opens_on_the_first_start_only(launched, tiny, monkeypatch, tmp_path):
    monkeypatch.delenv(launch.NO_RESTORE_ENV, raising=False)
    first = launched(["--model", str(tiny)], prefilled)
    assert first.learn_shown, "a fresh configuration starts with the Learn path open"
    assert first.learn_stop == 0, "at its first stop"
    # closed before the quit (open then, a relaunch opens it again: test_learn_relaunch.py)
    AppSettings(QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat)).learn_open_at = None
    second = launched(["--model", str(tiny)], prefilled)
    assert not second.learn_shown, "once only"


@pytest.mark.parametrize("how", ["flag", "environment"])
def test_a_scripted_run_does_not_open_learn(launched, tiny, monkeypatch, how):
    monkeypatch.delenv(launch.NO_RESTORE_ENV, raising=False)
    if how == "environment":
        monkeypatch.setenv(launch.NO_RESTORE_ENV, "1")
    result = launched(["--model", str(tiny)] + (["--no-restore"] if how == "flag" else []), prefilled)
    assert not result.learn_shown
    assert not result.window.settings.learn_seen, "a person's first start still shows it later"


def test_a_window_a_test_builds_has_no_learn(qapp, tmp_path):
    window = open_window(str(tmp_path / "settings.ini"))
    settle(0.3)
    assert not learn_shown(window)
    window.close()


@pytest.mark.parametrize("name", list(SCREENS))
def test_the_window_fits_the_screen_with_learn_open(qapp, tmp_path, monkeypatch, name):
    monkeypatch.setattr(QMessageBox, "warning", lambda *a: None)
    font = QApplication.font()
    with emulated_screen(SCREENS[name]) as available:
        window = open_window(str(tmp_path / "settings.ini"))
        settle(0.8)
        open_learn(window)
        settle(0.8)
        try:
            assert learn_shown(window)
            assert_fits(window, available.size(), f"Learn open on {name}")
        finally:
            window.close()
            QApplication.setFont(font)
