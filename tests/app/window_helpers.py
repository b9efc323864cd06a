"""The window's test helpers, plain functions the app's tests call: a fresh window on its own settings file,
waiting until the worker is idle, opening a model with a prompt and stepping. Their fixtures (the tiny Llama,
the window, the patched dialogs, the store in the test's folder) are in tests/app/conftest.py."""
from __future__ import annotations

from contextlib import contextmanager

import pytest
from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QMessageBox

from explorer.app.panels.base import Panel
from explorer.app.window.main_window import MainWindow
from explorer.app.window.settings import AppSettings

PROMPT = "To be, or not"


def new_window(qtbot, tmp_path, name="settings.ini"):
    settings = AppSettings(QSettings(str(tmp_path / name), QSettings.Format.IniFormat))
    window = MainWindow(settings=settings, autosave_path=tmp_path / "autosave.json", catalog=lambda: [])
    qtbot.addWidget(window)
    window.show()
    return window


def idle(qtbot, window, condition=lambda: True):
    """Wait for the model thread, a load, the panels' drawings in turns (Panel.drawing) and `condition`."""
    qtbot.waitUntil(lambda: not window.worker.busy and window.controller.loading is None and condition()
                    and not any(panel.drawing for panel in window.findChildren(Panel)), timeout=60000)
    return window.session.trace


def opened(qtbot, window, folder, prompt=PROMPT):
    window.prompt.set_text(prompt)
    window.open_model(str(folder))
    return idle(qtbot, window, lambda: window.session.trace is not None)


def step(qtbot, window, times=1):
    before = window.session.trace.n_steps
    for _ in range(times):
        window.actions.step.trigger()
    return idle(qtbot, window, lambda: window.session.trace.n_steps == before + times)


def prefilled(window) -> bool:
    """The window holds a trace and its worker is idle (`launched`'s condition for a prefilled prompt)."""
    return window.session.trace is not None and not window.worker.busy


@contextmanager
def session_opened(qtbot, tmp_path, path, n_steps: int):
    """(window, trace): a new window that opened the session file `path` (File > Open session) and holds its
    trace of `n_steps` steps, with no warning shown; closed on leaving."""
    warnings = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(QMessageBox, "warning", lambda parent, title, text, *a: warnings.append(text))
        window = new_window(qtbot, tmp_path)
        try:
            window.menus.open_session_file(str(path))
            trace = idle(qtbot, window, lambda: window.session.trace is not None
                         and window.session.trace.n_steps == n_steps)
            assert not warnings, warnings
            yield window, trace
        finally:
            window.close()
