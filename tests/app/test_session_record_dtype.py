"""The session file keeps the precision its trace was recorded in, and opening it replays at that precision.

Recording in float16 (Decode > Record the Trace in float16) rounds every recorded array, so a float16 session
replayed in float32 is another trace. The expectation is the original trace itself, recorded by another window
(or by the Python API, which records in float32), compared array by array, exactly. Files written before the
field existed read as float32.
"""
from __future__ import annotations

import json

import numpy as np
import pytest
from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QMessageBox

from explorer.app.state import session_file
from explorer.app.state.session_file import SessionFileError, SessionState
from explorer.app.window.main_window import MainWindow
from explorer.app.window.settings import AppSettings
from tests.app.window_helpers import PROMPT, idle, step


@pytest.fixture(autouse=True)
def store_home(monkeypatch, tmp_path):
    """The model store, recent list and autosave live in the test's folder, never in ~/.cache."""
    monkeypatch.setenv("TRANSFORMER_EXPLORER_HOME", str(tmp_path / "store"))


@pytest.fixture
def warnings(monkeypatch):
    shown = []
    monkeypatch.setattr(QMessageBox, "warning", lambda parent, title, text, *a: shown.append(text))
    return shown


def window_recording_in(qtbot, tmp_path, record_dtype: str, name: str) -> MainWindow:
    settings = AppSettings(QSettings(str(tmp_path / f"{name}.ini"), QSettings.Format.IniFormat))
    settings.record_dtype = record_dtype
    window = MainWindow(settings=settings, autosave_path=tmp_path / f"{name}-autosave.json", catalog=lambda: [])
    qtbot.addWidget(window)
    window.show()
    return window


def assert_same_trace(replayed, original, dtype) -> None:
    """Every recorded array equal, bit for bit, and in the same dtype."""
    assert replayed.n_steps == original.n_steps
    np.testing.assert_array_equal(replayed.token_ids, original.token_ids)
    for a, b in zip(replayed.steps, original.steps):
        assert a.chosen_id == b.chosen_id and a.forced == b.forced
        np.testing.assert_array_equal(a.top_probs, b.top_probs)
        for la, lb in zip(a.layers, b.layers):
            for name in ("q", "k", "v"):
                got, want = getattr(la.attn, name), getattr(lb.attn, name)
                assert got.dtype == want.dtype == np.dtype(dtype), name
                np.testing.assert_array_equal(got, want, err_msg=name)
            np.testing.assert_array_equal(la.x, lb.x)
    for layer in range(original.model.n_layers):
        for head in range(original.model.n_heads):
            np.testing.assert_array_equal(replayed.attention_head(layer, head), original.attention_head(layer, head))


def test_a_float16_session_opened_under_float32_replays_the_float16_trace(qtbot, tmp_path, tiny, warnings):
    saver = window_recording_in(qtbot, tmp_path, "float16", "saver")
    opener = window_recording_in(qtbot, tmp_path, "float32", "opener")
    try:
        saver.prompt.set_text(PROMPT)
        saver.open_model(str(tiny))
        idle(qtbot, saver, lambda: saver.session.trace is not None)
        original = step(qtbot, saver, 2)
        assert original.steps[0].layers[0].attn.q.dtype == np.float16
        path = tmp_path / "half.json"
        session_file.save(path, saver.session_state())
        assert json.loads(path.read_text(encoding="utf-8"))["record_dtype"] == "float16"

        opener.menus.open_session_file(str(path))
        replayed = idle(qtbot, opener, lambda: opener.session.trace is not None
                        and opener.session.trace.n_steps == original.n_steps)
        assert not warnings
        assert_same_trace(replayed, original, "float16")
        assert opener.controller.record_dtype == "float16" and opener.menus.half_trace.isChecked()
        assert opener.session_state().record_dtype == "float16"
    finally:
        saver.close()
        opener.close()


def test_the_apis_session_opened_under_float16_replays_in_float32(qtbot, tmp_path, tiny, warnings):
    import explorer

    run = explorer.load(tiny).run(PROMPT, steps=2)
    path = run.save_session(tmp_path / "api.json")
    assert session_file.load(path).record_dtype == "float32"
    opener = window_recording_in(qtbot, tmp_path, "float16", "opener")
    try:
        opener.menus.open_session_file(str(path))
        replayed = idle(qtbot, opener, lambda: opener.session.trace is not None
                        and opener.session.trace.n_steps == run.trace.n_steps)
        assert not warnings
        assert_same_trace(replayed, run.trace, "float32")
        assert not opener.menus.half_trace.isChecked()
    finally:
        opener.close()


def test_the_record_dtype_round_trips_and_an_old_file_reads_as_float32(tmp_path):
    state = SessionState(model="/m", prompt="hi", prompt_ids=(1, 2), steps=1, record_dtype="float16")
    session_file.save(tmp_path / "s.json", state)
    assert session_file.load(tmp_path / "s.json") == state
    body = json.loads(state.to_json())
    del body["record_dtype"]                                 # a file written before the field was saved
    (tmp_path / "old.json").write_text(json.dumps(body))
    assert session_file.load(tmp_path / "old.json").record_dtype == "float32"


def test_a_record_dtype_that_is_not_float32_or_float16_is_refused_in_one_sentence(tmp_path):
    body = json.loads(SessionState(prompt="hi").to_json())
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({**body, "record_dtype": "int8"}))
    with pytest.raises(SessionFileError) as error:
        session_file.load(path)
    message = str(error.value)
    assert str(path) in message and "'int8'" in message and "float16" in message and "\n" not in message
