"""The model catalog is listed off the GUI thread, after the first model, and never freezes the window."""
from __future__ import annotations

import threading

import pytest
import transformers  # noqa: E402,F401  (the tiny model is written with it; missing, the run fails, never skips)
from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QMessageBox

from explorer.app.thread.catalog_loader import CatalogLoader
from explorer.app.window.about import about_html
from explorer.app.window.main_window import MainWindow
from explorer.app.window.model_refs import ModelChoice
from explorer.app.window.settings import AppSettings
from explorer.core.errors import ExplorerError
from tests.app.window_helpers import idle

pytestmark = pytest.mark.usefixtures("store_home")  # the store in the test's folder


class SlowCatalog:
    """A catalog that waits for `release` and records the thread it ran on."""

    def __init__(self, choices) -> None:
        self.choices = choices
        self.release = threading.Event()
        self.threads: list[threading.Thread] = []

    def __call__(self):
        self.threads.append(threading.current_thread())
        assert self.release.wait(20), "the test never released the catalog"
        return self.choices


def make_window(qtbot, tmp_path, catalog) -> MainWindow:
    settings = AppSettings(QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat))
    window = MainWindow(settings=settings, autosave_path=tmp_path / "autosave.json", catalog=catalog)
    qtbot.addWidget(window)
    window.show()
    return window


def test_the_window_opens_while_the_catalog_is_still_being_listed(qtbot, tmp_path, tiny, dialogs):
    catalog = SlowCatalog([ModelChoice("tiny  (bundled)", str(tiny), license="MIT")])
    window = make_window(qtbot, tmp_path, catalog)
    try:
        qtbot.waitUntil(lambda: bool(catalog.threads), timeout=30000)   # after the worker imported torch
        assert window.isVisible() and window.model_bar.models.findData(str(tiny)) == -1
        assert catalog.threads[0] is not threading.main_thread()
        catalog.release.set()
        qtbot.waitUntil(lambda: window.model_bar.models.findData(str(tiny)) >= 0, timeout=5000)
        assert "MIT" in about_html(window), "About reads the last listing instead of listing again"
    finally:
        catalog.release.set()
        window.close()


def test_a_model_opened_at_start_loads_before_the_catalog_is_listed(qtbot, tmp_path, tiny, dialogs):
    listed_during_load = []
    window = None

    def catalog():
        listed_during_load.append(window is None or window.controller.loading is not None)
        return []

    window = make_window(qtbot, tmp_path, catalog)
    try:
        window.prompt.set_text("To be")
        window.open_model(str(tiny))            # as launch() does, right after building the window
        idle(qtbot, window, lambda: window.session.trace is not None)
        qtbot.waitUntil(lambda: bool(listed_during_load) and not window.catalog_loader.busy, timeout=10000)
        assert listed_during_load == [False]
    finally:
        window.close()


def test_a_refresh_asked_while_listing_runs_once_more_and_errors_are_reported(qtbot):
    calls = []
    gate = threading.Event()

    def catalog():
        calls.append(1)
        gate.wait(10)
        if len(calls) == 2:
            raise ExplorerError("the store folder cannot be read.")
        return [ModelChoice("a", "a")]

    loader = CatalogLoader(catalog)
    answers = []
    loader.ready.connect(lambda choices, error: answers.append((choices, error)))
    loader.refresh()
    loader.refresh()
    loader.refresh()
    gate.set()
    qtbot.waitUntil(lambda: len(answers) == 2 and not loader.busy, timeout=10000)
    assert len(calls) == 2
    assert answers[0][1] is None and answers[1] == ([], "the store folder cannot be read.")


def test_about_before_the_first_listing_says_it_is_under_way_not_that_there_are_none(qtbot, tmp_path, tiny, dialogs,
                                                                                      monkeypatch):
    """Help ▸ About opened before the catalog had been listed said "Models: none yet" with 8 models to open
    (drive31). Expectation: it says they are being listed (the window lists them once its model thread is ready,
    CatalogSchedule), and lists them once they are in."""
    catalog = SlowCatalog([ModelChoice("tiny  (bundled)", str(tiny), license="MIT")])
    window = make_window(qtbot, tmp_path, catalog)
    shown = []
    monkeypatch.setattr(QMessageBox, "about", lambda parent, title, text: shown.append(text))
    try:
        assert not window.catalog_loader.listed
        window.menus.about()
        assert "none yet" not in shown[0] and "being listed" in shown[0], shown[0]
        qtbot.waitUntil(lambda: bool(catalog.threads), timeout=30000)        # the window's own first listing
        catalog.release.set()
        qtbot.waitUntil(lambda: window.catalog_loader.listed, timeout=10000)
        assert "MIT" in about_html(window) and "being listed" not in about_html(window)
    finally:
        catalog.release.set()
        window.close()
