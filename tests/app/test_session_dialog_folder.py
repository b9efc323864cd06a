"""File ▸ Save Session and Open Session start in the folder the last file was saved to (the home folder at first),
as every export dialog does. They started in the process's working folder: under `make run`, the source tree
(drive 20, m9). A session saved is then where the next dialog opens."""
from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtWidgets import QFileDialog

from explorer.app.figures.figure_settings import FigureSettings
from tests.app.test_session_open_not_a_file import window  # noqa: F401 (the fixture)


@pytest.fixture
def asked(monkeypatch):
    """The folder each file dialog proposed; the save dialog answers `asked["answer"]`, the open one cancels."""
    seen = {"save": [], "open": [], "answer": ""}

    def save(parent, title, proposed, *args, **kwargs):
        seen["save"].append(Path(proposed))
        return seen["answer"], args[0] if args else ""

    def open_(parent, title, folder, *args, **kwargs):
        seen["open"].append(Path(folder))
        return "", ""

    monkeypatch.setattr(QFileDialog, "getSaveFileName", staticmethod(save))
    monkeypatch.setattr(QFileDialog, "getOpenFileName", staticmethod(open_))
    return seen


def test_session_dialogs_open_in_the_last_save_folder_and_remember_it(window, tmp_path, asked):  # noqa: F811
    exports = tmp_path / "figures"
    exports.mkdir()
    FigureSettings().last_folder = str(exports)
    window.menus.open_session()
    assert asked["open"] == [exports]
    window.menus.save_session()                      # cancelled: nothing written
    assert asked["save"] == [exports / "session.json"]
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    asked["answer"] = str(sessions / "mine.json")
    window.menus.save_session()
    assert (sessions / "mine.json").is_file()
    window.menus.open_session()
    assert asked["open"][-1] == sessions
    assert Path.cwd() not in asked["open"] + [p.parent for p in asked["save"]]
