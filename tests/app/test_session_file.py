"""Session files round-trip, are written atomically, refuse garbage in one sentence; the autosave spots crashes."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

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
    ('{"format": "transformer-explorer-session", "steps": "many"}', "field steps is 'many', not a whole number"),
    ('{"format": "transformer-explorer-session", "version": "1"}', "field version"),
    ('{"format": "transformer-explorer-session", "sampling": {"temperature": NaN}}',
     "sampling temperature=nan is not legal"),
    ('{"format": "transformer-explorer-session", "sampling": {"temperature": "0.7"}}', "sampling temperature='0.7'"),
    ('{"format": "transformer-explorer-session", "sampling": [0.7]}', "field sampling is a list"),
    ('{"format": "transformer-explorer-session", "sampling": {"seed": -1}}', "sampling seed=-1 is not legal"),
    # past the toolbar's spin box: opening the session raised OverflowError there (boundary27)
    ('{"format": "transformer-explorer-session", "sampling": {"top_k": 1000000000000000000000000000000}}',
     "sampling top_k=1000000000000000000000000000000 is not legal"),
    ('{"format": "transformer-explorer-session", "steps": 2.5}', "field steps is 2.5"),
    ('{"format": "transformer-explorer-session", "steps": true}', "field steps is True"),
    ('{"format": "transformer-explorer-session", "prompt_ids": ["1", 2]}', "field prompt_ids[0]"),
    ('{"format": "transformer-explorer-session", "prompt_ids": [[1]]}', "field prompt_ids[0] is a list"),
    ('{"format": "transformer-explorer-session", "forced": [[1]]}', "field forced[0]"),
    ('{"format": "transformer-explorer-session", "prompt": 5}', "field prompt is 5, not a string"),
    ('{"format": "transformer-explorer-session", "prompt": "a\\udc80b"}', "field prompt holds a character"),
    ('{"format": "transformer-explorer-session", "dtype": "int4"}', "field dtype is 'int4'"),
    ('{"format": "transformer-explorer-session", "edited": 1}', "field edited is 1, not true or false"),
    ('{"format": "transformer-explorer-session", "experiments": [{"on": true, "intervention": '
     '{"ablations": [{"layer": "x", "head": 1}]}}]}', "field experiments[0].intervention.ablations[0].layer"),
    ('{"format": "transformer-explorer-session", "experiments": [{"on": true, "intervention": '
     '{"kernels": [{"kernel": {"name": "exp", "temperature": NaN}}]}}]}', "temperature is nan"),
    ('{"format": "transformer-explorer-session", "experiments": [{"on": true, "intervention": '
     '{"ablations": [{"layer": 1.5, "head": 1}]}}]}', "layer is 1.5"),
    ('{"format": "transformer-explorer-session", "experiments": ' + "[" * 100 + "]" * 100 + "}", "nested deeper"),
    ('{"format": "transformer-explorer-session", "experiments": ' + "[" * 200000 + "]" * 200000 + "}",
     "nested too deeply"),
])
def test_a_bad_session_file_is_refused_in_one_sentence(tmp_path, content, words):
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(SessionFileError) as error:
        session_file.load(path)
    assert words in str(error.value) and str(path) in str(error.value)
    assert "\n" not in str(error.value) and len(str(error.value)) < 300


def test_an_unwritable_path_is_an_error_and_leaves_the_old_file(tmp_path):
    (tmp_path / "a-file").write_text("old")
    with pytest.raises(SessionFileError, match="Cannot write the session to"):
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



def a_dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def write_autosave(path, prompt, pid):
    body = json.loads(SessionState(prompt=prompt).to_json())
    path.write_text(json.dumps({**body, "pid": pid}), encoding="utf-8")


def test_two_windows_have_two_autosaves_and_a_clean_exit_removes_only_its_own(qtbot, tmp_path, monkeypatch):
    """A window in another process autosaves and keeps running; this one exits cleanly; then the other dies."""
    monkeypatch.setenv("TRANSFORMER_EXPLORER_HOME", str(tmp_path))
    script = (
        "import sys, time\n"
        "from PySide6.QtCore import QCoreApplication\n"
        "from explorer.app.state.session_file import Autosaver, SessionState\n"
        "app = QCoreApplication([])\n"
        "saver = Autosaver(lambda: SessionState(prompt='first window'))\n"
        "saver.save_now()\n"
        "print(saver.path, flush=True)\n"
        "time.sleep(60)\n"
    )
    first = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                             env={**os.environ, "TRANSFORMER_EXPLORER_HOME": str(tmp_path)})
    try:
        first_path = Path(first.stdout.readline().strip())
        second = Autosaver(lambda: SessionState(prompt="second window"))
        assert second.path != first_path and second.path.parent == first_path.parent == tmp_path
        assert second.save_now()
        second.discard()
        assert first_path.is_file() and not second.path.exists(), "the clean exit removed only its own"
        assert crashed_session() is None, "the first window is still running"
    finally:
        first.kill()
        first.wait()
    found = session_file.find_crashed(Autosaver(lambda: None).path)
    assert found is not None and found.path == first_path and found.state.prompt == "first window"


def test_an_autosave_of_a_dead_window_beside_a_live_ones_is_offered(tmp_path, monkeypatch):
    monkeypatch.setenv("TRANSFORMER_EXPLORER_HOME", str(tmp_path))
    write_autosave(tmp_path / "autosave-session-1-live.json", "live", os.getpid())
    write_autosave(tmp_path / "autosave-session-2-dead.json", "dead", a_dead_pid())
    assert crashed_session().prompt == "dead"


@pytest.mark.parametrize("content", [
    "[1, 2, 3]",                                                                   # a JSON list
    '{"format": "transformer-explorer-session", "pid": 100000000000000000000000000000}',   # an absurd pid
    '{"format": "transformer-explorer-session", "pid": "12"}',
    '{"format": "transformer-explorer-session", "steps": NaN}',
    "\udcff not utf-8".encode("utf-8", "surrogateescape").decode("latin-1"),
])
def test_a_bad_autosave_is_moved_aside_with_a_message_and_never_blocks_a_start(tmp_path, monkeypatch, content):
    monkeypatch.setenv("TRANSFORMER_EXPLORER_HOME", str(tmp_path))
    bad = tmp_path / "autosave-session-4242-abcd.json"
    bad.write_text(content, encoding="latin-1")
    notices = []
    assert session_file.find_crashed(None, notices) is None
    assert not bad.exists() and (tmp_path / (bad.name + session_file.SET_ASIDE_SUFFIX)).is_file()
    assert len(notices) == 1 and "moved to" in notices[0] and "\n" not in notices[0]
    assert session_file.find_crashed(None, []) is None, "set aside once, it is not read again"


def test_the_legacy_shared_autosave_of_a_dead_run_is_still_offered(tmp_path, monkeypatch):
    monkeypatch.setenv("TRANSFORMER_EXPLORER_HOME", str(tmp_path))
    write_autosave(tmp_path / session_file.AUTOSAVE_NAME, "from an older version", a_dead_pid())
    assert crashed_session().prompt == "from an older version"


def test_a_session_file_gets_the_mode_the_umask_says(tmp_path):
    old = os.umask(0o022)
    try:
        session_file.save(tmp_path / "s.json", SessionState(prompt="x"))
    finally:
        os.umask(old)
    assert (tmp_path / "s.json").stat().st_mode & 0o777 == 0o644


def test_a_prompt_with_a_lone_surrogate_is_refused_and_leaves_no_temporary(tmp_path):
    with pytest.raises(SessionFileError, match="not valid Unicode"):
        session_file.save(tmp_path / "s.json", SessionState(prompt="a\udc80"))
    assert os.listdir(tmp_path) == []


def test_a_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "s.json"
    os.mkfifo(fifo)
    with pytest.raises(SessionFileError, match=r"s.json is a named pipe \(FIFO\), not a session file"):
        session_file.load(fifo)


def test_a_start_beside_a_bad_autosave_asks_nothing_and_says_it_in_the_status_bar(qtbot, tmp_path, monkeypatch):
    from PySide6.QtWidgets import QMainWindow, QMessageBox

    from explorer.app.window import crash_restore

    monkeypatch.setenv("TRANSFORMER_EXPLORER_HOME", str(tmp_path))
    (tmp_path / "autosave-session-77-dead.json").write_text("[]")
    write_autosave(tmp_path / "autosave-session-78-dead.json", "typed before the crash", a_dead_pid())
    asked = []
    monkeypatch.setattr(QMessageBox, "question", lambda *a: (asked.append(a[2]), QMessageBox.StandardButton.Yes)[1])
    window = QMainWindow()
    qtbot.addWidget(window)
    own = Autosaver(lambda: None, parent=window)
    restored = []
    assert crash_restore.offer_crash_restore(window, own.path, restored.append)
    assert [state.prompt for state in restored] == ["typed before the crash"] and len(asked) == 1
    assert "moved to" in window.statusBar().currentMessage()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["autosave-session-77-dead.json.unreadable"], \
        "the dead run's autosave is removed once answered; the bad one is set aside"
    assert not crash_restore.offer_crash_restore(window, own.path, restored.append) and len(asked) == 1


@pytest.mark.parametrize("content, line, column", [
    ('{\n "format": "transformer-explorer-session",\n "prompt": "never closed', 3, 12),
    ('{\n\n  "a": ,\n}', 3, 8),
])
def test_invalid_json_names_line_and_column_once(tmp_path, content, line, column):
    """drive21 m11: 'Unterminated string starting at at line 5' — json's msg ends in 'at'."""
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(SessionFileError) as error:
        session_file.load(path)
    words = str(error.value).replace(str(path), "PATH").split()
    assert all(a != b for a, b in zip(words, words[1:])), words
    assert f"line {line}, column {column}" in str(error.value)


def test_the_window_warns_of_an_autosave_it_set_aside(window, dialogs, tmp_path):
    """A status bar notice went under the start's own messages before anyone read it (boundary27): the window's
    one door for errors says it, in one sentence that ends once."""
    bad = Path(window.autosaver.path)            # a test's own name: looked at alone (find_crashed)
    bad.write_text("not json at all")
    assert not window.offer_crash_restore()
    assert len(dialogs["warnings"]) == 1 and dialogs["questions"] == []
    warned = dialogs["warnings"][0]
    assert f"could not be read, so it was moved to {bad}.unreadable" in warned and not warned.endswith(".).")
    assert "moved to" in window.status.error_line.message
    assert bad.with_name(bad.name + ".unreadable").is_file()
