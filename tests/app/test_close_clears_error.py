"""A closed model clears the error line (drive 21 m10).

After a failed File ▸ Open Model File (a picture named fake.safetensors: "…has no config.json…") and a later
Close Model, the status bar said "The model was closed." and, when that notice went, the old red error with its
Details… came back: QStatusBar hides its widgets under a notice and shows them again after. The error belonged
to the open that failed; the close that succeeded after it ends it.
"""
from __future__ import annotations

import pytest
from PySide6.QtCore import QSize

from tests.app.journey import BUNDLED, journey_in_a_window

pytestmark = pytest.mark.usefixtures("store_home")  # the store in the test's folder


def test_close_model_after_a_failed_open_leaves_no_error_behind(qtbot, tmp_path, monkeypatch):
    fake = tmp_path / "fake.safetensors"
    fake.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(64))
    with journey_in_a_window(qtbot, tmp_path, monkeypatch, QSize(1366, 768)) as journey:
        window, line = journey.window, journey.window.status.error_line
        window.prompt.set_text("To be, or not to be")
        window.open_model(str(BUNDLED / "shakespeare-mqa"))
        journey.idle("opening shakespeare-mqa")
        window.open_model(str(fake))
        journey.idle("opening fake.safetensors")
        assert line.message and line.isVisibleTo(window), "the failed open showed no error"
        window.menus.close_model()
        journey.idle("closing the model")
        assert window.status.currentMessage() == "The model was closed."
        window.status.clearMessage()                    # the notice's time is up
        assert not line.isVisibleTo(window), f"the old error came back: {line.message!r}"
        assert line.message == ""
