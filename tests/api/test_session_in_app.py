"""Run.save_session writes a file the app opens to the same trace (the window, offscreen, on the real core)."""
from __future__ import annotations

import numpy as np

import explorer
from tests.app.window_helpers import session_opened


def test_the_app_opens_an_api_session_to_the_same_trace(qtbot, tmp_path, monkeypatch):
    monkeypatch.setenv("TRANSFORMER_EXPLORER_HOME", str(tmp_path / "store"))
    run = explorer.load("shakespeare-gqa").run("To be, or not to be", steps=2).force(11).step()
    path = run.save_session(tmp_path / "run.json")
    with session_opened(qtbot, tmp_path, path, run.trace.n_steps) as (window, trace):
        assert trace.token_ids.tolist() == run.ids.tolist()
        assert [s.chosen_id for s in trace.steps] == [s.chosen_id for s in run.trace.steps]
        np.testing.assert_allclose(trace.attention_head(3, 1), run.attention(3, 1), atol=1e-6)
        assert window.prompt.text == "To be, or not to be"
