"""Open Session on a path that is not a session file (a symbolic link that loops, one to nothing, a folder, a
named pipe): one dialog whose sentence names the path and what it is, and the window goes on as it was."""
from __future__ import annotations

import os
from pathlib import Path

import pytest
from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QMessageBox

from explorer.app.window.main_window import MainWindow
from explorer.app.window.settings import AppSettings


def _loop(path: Path) -> None:
    (path.parent / "other.json").symlink_to(path.name)
    path.symlink_to("other.json")


MAKERS = {"a symbolic link that loops": _loop,
          "a symbolic link to gone.json, which does not exist": lambda p: p.symlink_to("gone.json"),
          "a folder": Path.mkdir,
          "a named pipe (FIFO)": os.mkfifo}


@pytest.fixture
def window(qtbot, tmp_path, monkeypatch):
    warnings = []
    monkeypatch.setattr(QMessageBox, "warning", lambda parent, title, text, *a: warnings.append(text))
    settings = AppSettings(QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat))
    window = MainWindow(settings=settings, autosave_path=tmp_path / "autosave.json", catalog=lambda: [])
    qtbot.addWidget(window)
    window.warnings = warnings
    return window


@pytest.mark.parametrize("what", list(MAKERS))
def test_open_session_names_the_path_and_what_it_is(window, tmp_path, what):
    path = tmp_path / "s.json"
    MAKERS[what](path)
    before = window.session_state()
    window.menus.open_session_file(str(path))
    assert len(window.warnings) == 1, window.warnings
    sentence = window.warnings[0]
    assert sentence.startswith(f"{path} is {what}") and "\n" not in sentence, sentence
    assert sentence.count(". ") == 0 and sentence.endswith("."), sentence      # one sentence
    assert window.session_state() == before
