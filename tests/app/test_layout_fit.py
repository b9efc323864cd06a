"""The window asks for no more than the screen it is on: after View ▸ Reset Layout, after an error with
a long text, and after the window is shrunk and grown again, on emulated 1366x768 and 1920x1080 screens
with no window manager (tests/app/screen_fit.py)."""
from __future__ import annotations

import pytest
from PySide6.QtWidgets import QAbstractButton, QLabel, QMessageBox, QPlainTextEdit

from tests.app.layout_probe import open_window
from tests.app.screen_fit import assert_fits, open_settled, settle

LONG_ERROR = "RuntimeError: the conversion failed for every weight.\n" + "\n".join(
    f"While copying the parameter named layers.{i}.attn.wk.weight: Setting requires_grad=True on inference "
    f"tensor outside InferenceMode is not allowed." for i in range(30))


@pytest.fixture
def window(qapp, tmp_path, screen, monkeypatch):
    window = open_settled(tmp_path, monkeypatch, 0.6)
    yield window
    window.close()


def reset_layout(window) -> None:
    action = next(a for a in window.menus.view.actions() if a.text().replace("&", "") == "Reset Layout")
    action.trigger()
    settle(0.6)


def test_the_first_window_and_reset_layout_fit_the_screen(window, screen):
    assert_fits(window, screen, "first window")
    reset_layout(window)
    assert_fits(window, screen, "after Reset Layout")
    reset_layout(window)
    assert_fits(window, screen, "after a second Reset Layout")


def test_a_long_error_keeps_the_layout_and_is_shown_whole_only_in_its_details(window, screen):
    reset_layout(window)
    window.session.report_error(LONG_ERROR)
    settle(0.4)
    assert_fits(window, screen, "after a 3,000-character error")
    second_line = LONG_ERROR.splitlines()[1]
    assert window.dialogs and all(second_line not in text and len(text) <= 400 for text in window.dialogs)
    texts = [w.text() for w in window.findChildren(QLabel) + window.findChildren(QAbstractButton)]
    assert not [t for t in texts if second_line[:60] in t], "the error's text stands in a label"
    line = window.status.error_line
    assert line.isVisible() and line.height() <= 2 * line.fontMetrics().height() + 8
    dialog = line.details()
    assert dialog.findChild(QPlainTextEdit).toPlainText() == LONG_ERROR
    assert dialog.height() <= screen.height() and dialog.width() <= screen.width()
    dialog.close()
    # The KV lab's conversion failed with the same text: one line there too.
    lab = window.docks["kv_lab"]
    lab.raise_()
    panel = lab.widget()
    panel.runner.failed.emit(LONG_ERROR)                # as the what-if runner reports a failed job
    settle(0.4)
    assert_fits(window, screen, "after a failed conversion")
    assert panel.error_line.message == LONG_ERROR and second_line not in panel.run_summary.text()


def test_a_saved_layout_that_does_not_fit_is_not_restored_as_is(qapp, tmp_path, screen, monkeypatch):
    monkeypatch.setattr(QMessageBox, "warning", lambda *a: None)
    settings = str(tmp_path / "settings.ini")
    first = open_window(settings)
    settle(0.6)
    first.docks["attention"].widget().setMinimumHeight(2 * screen.height())   # an error's text did this once
    settle(0.4)
    first.resize(screen.width(), 3 * screen.height())
    settle(0.2)
    first.close()                                                              # saves that layout
    again = open_window(settings)
    try:
        settle(0.8)
        assert_fits(again, screen, "after a restart on the saved layout")
    finally:
        again.close()
