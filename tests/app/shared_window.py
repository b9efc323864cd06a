"""One window with the tiny Llama open, shared by all the tests of a module (building one costs seconds).

Dialogs are patched for the window's whole life: warnings are recorded, questions
are recorded and answered No, so nothing is ever cut without a test saying so.
"""
from __future__ import annotations

import time
from contextlib import contextmanager
from pathlib import Path

import pytest
from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QMessageBox

from explorer.app.thread.worker import ModelWorker
from explorer.app.window.main_window import MainWindow
from explorer.app.window.settings import AppSettings
from tests.app.fake_core import FakeCore
from tests.app.screen_fit import SCREENS, emulated_screen
from tests.app.tiny_model import make_tiny_llama


def make_window(qtbot, tmp_path, worker=None, catalog=lambda: []):
    """A shown MainWindow on the fake core (or `worker`), with its own settings file under tmp_path."""
    settings = AppSettings(QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat))
    window = MainWindow(worker=worker or ModelWorker(FakeCore().api()), settings=settings,
                        autosave_path=tmp_path / "autosave.json", catalog=catalog)
    qtbot.addWidget(window)
    window.show()
    return window


@pytest.fixture
def window_recording_loads(qtbot, tmp_path, monkeypatch):
    """A MainWindow (real worker, no catalog) whose controller records the models it is asked to load
    in `window.loads` instead of loading them."""
    loads = []
    settings = AppSettings(QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat))
    window = MainWindow(settings=settings, autosave_path=tmp_path / "autosave.json", catalog=lambda: [])
    qtbot.addWidget(window)
    monkeypatch.setattr(window.controller, "load", lambda reference, *args: loads.append(reference))
    window.loads = loads
    yield window
    window.close()


@contextmanager
def window_with_tiny_model(app, root: Path, dialogs: dict, prompt: str = "To be, or not"):
    """Yield a shown MainWindow in which the tiny Llama at root/tiny-llama has prefilled `prompt`."""
    tiny = make_tiny_llama(root / "tiny-llama")
    dialogs.setdefault("warnings", [])
    dialogs.setdefault("questions", [])
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TRANSFORMER_EXPLORER_HOME", str(root / "store"))
        patch.setattr(QMessageBox, "warning", lambda parent, title, text, *a: dialogs["warnings"].append(text))
        patch.setattr(QMessageBox, "question",
                      lambda parent, title, text, *a: (dialogs["questions"].append(text)
                                                       or QMessageBox.StandardButton.No))
        settings = AppSettings(QSettings(str(root / "settings.ini"), QSettings.Format.IniFormat))
        window = MainWindow(settings=settings, autosave_path=root / "autosave.json", catalog=lambda: [])
        window.show()
        window.prompt.set_text(prompt)
        window.open_model(str(tiny))
        settle(app, lambda: window.session.trace is not None and not window.worker.busy)
        window.tiny = tiny
        try:
            yield window
        finally:
            window.close()


@contextmanager
def window_three_steps_on(app, root: Path):
    """The real window (1200x800 on a 1920x1080 screen) with the tiny Llama: its prompt prefilled, then three
    tokens decoded by Step."""
    with emulated_screen(SCREENS["1920x1080"]), window_with_tiny_model(app, root, {}) as window:
        window.resize(1200, 800)
        for steps in (2, 3, 4):
            window.controller.step()
            settle(app, lambda: window.session.trace.n_steps == steps and not window.worker.busy)
        yield window


def settle(app, condition, timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "the window did not settle"
        app.processEvents()
        time.sleep(0.005)


def make(qtbot, session, cls):
    """A panel of class `cls` on `session`, shown at a size its plots can draw in."""
    panel = cls(session)
    qtbot.addWidget(panel)
    panel.resize(900, 650)
    panel.show()
    return panel
