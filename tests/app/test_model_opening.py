"""A device or dtype chosen in the toolbar reopens the open model only when it differs from the one it runs on."""
from __future__ import annotations

from types import SimpleNamespace

import pytest
from PySide6.QtCore import QSettings

from explorer.app.window.main_window import MainWindow
from explorer.app.window.settings import AppSettings


@pytest.fixture
def window(qtbot, tmp_path, monkeypatch):
    loads = []
    settings = AppSettings(QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat))
    window = MainWindow(settings=settings, autosave_path=tmp_path / "autosave.json", catalog=lambda: [])
    qtbot.addWidget(window)
    monkeypatch.setattr(window.controller, "load", lambda reference, *args: loads.append(reference))
    window.loads = loads
    yield window
    window.close()


def test_a_new_device_reopens_the_model_and_the_same_one_does_not(window):
    window.model_bar.device_changed.emit("cpu", "float32")
    assert window.loads == [], "nothing is open: nothing to reopen"
    window.controller.summary = SimpleNamespace(reference="tiny-model", device="cpu", dtype="float32")
    window.model_bar.device_changed.emit("cpu", "float32")
    assert window.loads == []
    window.model_bar.device_changed.emit("cpu", "bfloat16")
    window.model_bar.device_changed.emit("cuda", "float32")
    assert window.loads == ["tiny-model", "tiny-model"]
    assert (window.settings.device, window.settings.dtype) == ("cuda", "float32")
