"""A failed pull reaches the person through the error bar, as every other error: on Xvfb at 1366x768 a pull
that failed with a long message opened its own box with the whole text on one clipped line, 886 px wide,
and the status bar's error line kept the error before it."""
from __future__ import annotations

import pytest
from PySide6.QtWidgets import QMessageBox, QProgressDialog

from explorer.app.window import pull_dialog
from tests.app.window_helpers import new_window

pytestmark = pytest.mark.usefixtures("store_home")  # the store in the test's folder


def test_a_failed_pull_is_shown_on_the_error_line_with_its_first_line_in_the_box(qtbot, tmp_path, monkeypatch):
    boxes = []
    monkeypatch.setattr(QMessageBox, "warning", lambda parent, title, text, *rest: boxes.append(text))
    window = new_window(qtbot, tmp_path)
    window.status.error_line.show_error("an earlier error")

    class Job:
        name = "smollm2-135m"

    reason = "network unreachable\n" + "pip said: " + "x" * 3000
    dialog = QProgressDialog("Pulling…", "Cancel", 0, 10, window)
    pull_dialog._done(window, dialog, Job, reason)
    line = window.status.error_line
    assert line.isVisible() and "smollm2-135m" in line.message and reason in line.message
    assert len(boxes) == 1 and "x" * 3000 not in boxes[0] and "smollm2-135m" in boxes[0]
    window.close()
