"""A model that opens clears the error line a failed load left (issue 22).

On a bare X screen, opening a file of random bytes named x.gguf left its error in the status bar's error line
through three later models that opened well: the line said a load had failed while the window showed a model
loaded and running. The failed load's error is about a model no longer being opened; the model now open says
otherwise.
"""
from __future__ import annotations

import os

import pytest
from PySide6.QtCore import QSize

from tests.app.journey import BUNDLED, journey_in_a_window

pytestmark = pytest.mark.usefixtures("store_home")  # the store in the test's folder


def test_a_model_opened_after_a_failed_load_clears_its_error(qtbot, tmp_path, monkeypatch):
    junk = tmp_path / "x.gguf"
    junk.write_bytes(os.urandom(4096))
    with journey_in_a_window(qtbot, tmp_path, monkeypatch, QSize(1366, 768)) as journey:
        window, line = journey.window, journey.window.status.error_line
        window.open_model(str(junk))
        journey.idle("opening x.gguf of random bytes")
        assert line.message and line.isVisibleTo(window), "the failed load showed no error"
        assert window.controller.summary is None
        for name in ("shakespeare-gqa", "shakespeare-mqa"):
            window.prompt.set_text("To be, or not to be")
            window.open_model(str(BUNDLED / name))
            journey.idle(f"opening {name}")
            assert window.controller.summary is not None and window.session.trace is not None, name
            assert line.message == "", f"after {name} opened, the error line still reads {line.message!r}"
            assert not line.isVisibleTo(window), f"after {name} opened, the error line is still shown"
