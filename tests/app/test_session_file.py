"""Session files round-trip, are written atomically, refuse garbage in one sentence; the autosave spots crashes."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from explorer.app.state import session_file
from explorer.app.state.session_file import Autosaver, SessionFileError, SessionState, crashed_session
from explorer.app.thread.worker import SamplingSettings
from tests.app.fake_core import FakeDecoder, FakeLoaded


def a_trace_with_a_forced_token():
    decoder = FakeDecoder(FakeLoaded("m", "cpu"), SamplingSettings())
    decoder.prefill([1, 5, 6])
    decoder.step()
    decoder.force(17)
    return decoder.step()


def test_state_of_a_trace_records_prompt_ids_forced_tokens_and_steps():
    trace = a_trace_with_a_forced_token()
    state = SessionState.of("smollm2-135m", "hi", SamplingSettings(temperature=0.7, seed=3), trace)
    assert state.prompt_ids == (1, 5, 6)
    assert state.forced == ((1, 17),)
    assert state.steps == 3


def test_round_trip_keeps_every_field(tmp_path):
    state = SessionState(model="/models/x", prompt="Ünïcode 🙂 שלום\n", prompt_ids=(1, 2, 3),
                         sampling=SamplingSettings(0.8, 40, 0.9, 7), forced=((1, 17), (4, 2)), steps=6,
                         device="cpu", dtype="bfloat16")
    path = tmp_path / "s.json"
    session_file.save(path, state)
    assert session_file.load(path) == state
    assert json.loads(path.read_text(encoding="utf-8"))["format"] == "transformer-explorer-session"


@pytest.mark.parametrize("content, words", [
    ("{not json", "not valid JSON"),
    ('{"format": "something-else"}', "not a Transformer Explorer session"),
    ('{"format": "transformer-explorer-session", "version": 99}', "newer version"),
    ('{"format": "transformer-explorer-session", "steps": "many"}', "malformed field"),
])
def test_a_bad_session_file_is_refused_in_one_sentence(tmp_path, content, words):
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(SessionFileError) as error:
        session_file.load(path)
    assert words in str(error.value) and str(path) in str(error.value)
    assert "\n" not in str(error.value)


def test_an_unwritable_path_is_an_error_and_leaves_the_old_file(tmp_path):
    (tmp_path / "a-file").write_text("old")
    with pytest.raises(SessionFileError, match="cannot write the session"):
        session_file.save(tmp_path / "a-file" / "s.json", SessionState())
    assert os.listdir(tmp_path) == ["a-file"] and (tmp_path / "a-file").read_text() == "old"


def test_atomic_write_replaces_the_whole_file(tmp_path):
    path = tmp_path / "s.json"
    session_file.write_atomically(path, "a" * 10000)
    session_file.write_atomically(path, "b")
    assert path.read_text() == "b"
    assert os.listdir(tmp_path) == ["s.json"]


def test_autosave_writes_only_changes_and_a_clean_exit_removes_it(qtbot, tmp_path):
    state = {"value": SessionState(prompt="one")}
    saver = Autosaver(lambda: state["value"], tmp_path / "auto.json", interval_ms=10)
    assert saver.save_now()
    assert not saver.save_now(), "nothing changed, nothing written"
    state["value"] = SessionState(prompt="two")
    saver.start()
    qtbot.waitUntil(lambda: "two" in (tmp_path / "auto.json").read_text(encoding="utf-8"))
    saver.discard()
    assert not (tmp_path / "auto.json").exists()


def test_an_autosave_of_a_live_process_is_not_a_crash(tmp_path):
    path = tmp_path / "auto.json"
    body = json.loads(SessionState(prompt="still running").to_json())
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        path.write_text(json.dumps({**body, "pid": sleeper.pid}))
        assert crashed_session(path) is None
    finally:
        sleeper.kill()
        sleeper.wait()
    assert crashed_session(path).prompt == "still running"


def test_a_killed_process_leaves_a_restorable_autosave(tmp_path):
    """SIGKILL a process that autosaves; the next start finds its last state whole."""
    path = tmp_path / "auto.json"
    script = (
        "import os, signal, sys\n"
        "from PySide6.QtCore import QCoreApplication\n"
        "from explorer.app.state.session_file import Autosaver, SessionState\n"
        "app = QCoreApplication([])\n"
        f"saver = Autosaver(lambda: SessionState(prompt='typed before the crash', steps=4), {str(path)!r})\n"
        "saver.save_now()\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=os.getcwd(), timeout=60)
    assert done.returncode == -9
    restored = crashed_session(path)
    assert restored is not None and restored.prompt == "typed before the crash" and restored.steps == 4

