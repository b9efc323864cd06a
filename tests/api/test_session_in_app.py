"""Run.save_session writes a file the app opens to the same trace (the window, offscreen, on the real core)."""
from __future__ import annotations

import numpy as np
from PySide6.QtWidgets import QMessageBox

import explorer
from tests.app.window_helpers import idle, new_window


def test_the_app_opens_an_api_session_to_the_same_trace(qtbot, tmp_path, monkeypatch):
    monkeypatch.setenv("TRANSFORMER_EXPLORER_HOME", str(tmp_path / "store"))
    warnings = []
    monkeypatch.setattr(QMessageBox, "warning", lambda parent, title, text, *a: warnings.append(text))
    run = explorer.load("shakespeare-gqa").run("To be, or not to be", steps=2).force(11).step()
    path = run.save_session(tmp_path / "run.json")
    window = new_window(qtbot, tmp_path)
    try:
        window.menus.open_session_file(str(path))
        trace = idle(qtbot, window, lambda: window.session.trace is not None
                     and window.session.trace.n_steps == run.trace.n_steps)
        assert not warnings
        assert trace.token_ids.tolist() == run.ids.tolist()
        assert [s.chosen_id for s in trace.steps] == [s.chosen_id for s in run.trace.steps]
        np.testing.assert_allclose(trace.attention_head(3, 1), run.attention(3, 1), atol=1e-6)
        assert window.prompt.text == "To be, or not to be"
    finally:
        window.close()
