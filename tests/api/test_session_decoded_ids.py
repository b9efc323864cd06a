"""Run.save_session keeps the tokens a sampled run decoded, as the app's files do: the app opens it to those ids
even when the file's sampling settings would draw others (the window saves its sampling bar's settings, which
the person may have changed after stepping), and the window saves the reopened trace to the same file."""
from __future__ import annotations

import json

import explorer
from tests.app.window_helpers import session_opened


def test_the_app_opens_a_sampled_api_session_to_the_ids_decoded_whatever_its_seed(qtbot, tmp_path, monkeypatch):
    monkeypatch.setenv("TRANSFORMER_EXPLORER_HOME", str(tmp_path / "store"))
    sampling = explorer.Sampling(temperature=2.0, top_k=0, top_p=1.0, seed=3)
    run = explorer.load("shakespeare-gqa").run("To be, or not to be", steps=4, sampling=sampling)
    ids, chosen = run.ids.tolist(), [int(s.chosen_id) for s in run.trace.steps]
    path = run.save_session(tmp_path / "run.json")
    body = json.loads(path.read_text())
    assert body["decoded"] == chosen and body["forced"] == []
    body["sampling"]["seed"] = 4                      # what the file holds now draws other tokens
    path.write_text(json.dumps(body))
    with session_opened(qtbot, tmp_path, path, run.trace.n_steps) as (window, trace):
        assert trace.token_ids.tolist() == ids
        assert [int(s.chosen_id) for s in trace.steps] == chosen and not any(s.forced for s in trace.steps)
        assert json.loads(window.session_state().to_json())["decoded"] == chosen
