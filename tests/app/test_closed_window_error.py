"""A job's failure that reaches a window already closed opens no modal dialog: the model thread's failure was
queued before the close and delivered after it, and offscreen (or over no window) that dialog waited for ever;
it hung the Learn contrast test once Help ▸ Learn built every tabbed panel. The error line still keeps it."""
from __future__ import annotations

from PySide6.QtWidgets import QMessageBox

from tests.app.shared_window import make_window


def test_an_error_after_the_close_opens_no_dialog_and_one_before_does(qtbot, tmp_path, monkeypatch):
    said = []
    monkeypatch.setattr(QMessageBox, "warning", lambda parent, title, text, *a: said.append(text))
    window = make_window(qtbot, tmp_path)
    window.session.report_error("The first thing went wrong.")
    assert said == ["The first thing went wrong."]            # an open window says it
    window.close()
    window.session.report_error("No model is loaded yet; open one from the Model menu first.")
    assert said == ["The first thing went wrong."], said       # a closed one asks nobody anything
    assert "No model is loaded yet" in window.status.error_line.message
