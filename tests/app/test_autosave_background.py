"""The timer's autosave serialises and writes off the GUI thread (issue 22: ~100 ms every 3 s at 8,000 tokens held up
a step's repaint), writes the session it was given, and a crash in the middle of a write leaves the previous one."""
from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading

from explorer.app.state import session_file
from explorer.app.state.session_file import Autosaver, SessionState, crashed_session
from explorer.app.thread.worker import SamplingSettings


def a_long_session(steps: int) -> SessionState:
    ids = tuple(random.Random(steps).randrange(49152) for _ in range(8000))
    return SessionState(model="smollm2-135m", prompt="Ünïcode 🙂 " * 800, prompt_ids=ids,
                        sampling=SamplingSettings(0.7, 40, 0.9, 3), forced=((2, 17),), steps=steps)


def test_the_timer_writes_the_session_on_another_thread_while_the_gui_thread_runs(qtbot, tmp_path, monkeypatch):
    real_write = session_file.write_atomically
    go, writers = threading.Event(), []

    def slow_disk(path, text):               # a write that lasts until the GUI thread has shown it is free
        writers.append(threading.current_thread())
        assert go.wait(timeout=30), "the GUI thread never ran while the autosave was being written"
        real_write(path, text)

    monkeypatch.setattr(session_file, "write_atomically", slow_disk)
    state = {"value": a_long_session(steps=9)}
    saver = Autosaver(lambda: state["value"], tmp_path / "auto.json", interval_ms=10)
    saver.start()
    qtbot.waitUntil(lambda: len(writers) == 1, timeout=10000)    # the event loop runs while the write waits
    go.set()
    assert writers[0] is not threading.main_thread()
    qtbot.waitUntil(lambda: (tmp_path / "auto.json").exists(), timeout=10000)
    assert session_file.load(tmp_path / "auto.json") == state["value"]
    assert json.loads((tmp_path / "auto.json").read_text(encoding="utf-8"))["pid"] == os.getpid()

    state["value"] = a_long_session(steps=10)          # the next step: written again, whole
    qtbot.waitUntil(lambda: session_file.load(tmp_path / "auto.json").steps == 10, timeout=10000)
    assert session_file.load(tmp_path / "auto.json") == state["value"]
    saver.discard()
    # the autosave gone; the session quit in kept for the next launch (session_file.quit_session_path)
    assert not (tmp_path / "auto.json").exists() and os.listdir(tmp_path) == [session_file.QUIT_SESSION_NAME]
    assert not writers[0].is_alive(), "the writing thread outlived the window's clean exit"


def test_a_failing_background_write_is_told_on_the_gui_thread(qtbot, tmp_path):
    (tmp_path / "a-file").write_text("not a folder")
    saver = Autosaver(lambda: SessionState(prompt="typed"), tmp_path / "a-file" / "auto.json", interval_ms=10)
    saver.start()
    qtbot.waitUntil(lambda: saver.problem is not None, timeout=10000)
    assert saver.problem.startswith("The session is not autosaved: Cannot write the session to")
    saver.discard()


def test_a_crash_in_the_middle_of_a_background_write_leaves_the_previous_autosave(tmp_path):
    """The second write is killed after its text is on disk under the temporary name, before the rename."""
    path = tmp_path / "auto.json"
    script = (
        "import os, signal\n"
        "from PySide6.QtCore import QCoreApplication\n"
        "from explorer.core import files\n"
        "from explorer.app.state.session_file import Autosaver, SessionState\n"
        "app = QCoreApplication([])\n"
        "state = {'value': SessionState(prompt='the first', prompt_ids=tuple(range(8000)), steps=4)}\n"
        f"saver = Autosaver(lambda: state['value'], {str(path)!r}, interval_ms=10)\n"
        "assert saver.save_now()\n"
        "files._flush_to_disk = lambda temporary: os.kill(os.getpid(), signal.SIGKILL)\n"
        "state['value'] = SessionState(prompt='the second', prompt_ids=tuple(range(8000)), steps=5)\n"
        "saver.start()\n"
        "app.exec()\n"
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=os.getcwd(), timeout=120)
    assert done.returncode == -signal.SIGKILL
    assert any(".tmp" in name for name in os.listdir(tmp_path)), "the second write was not under way"
    restored = crashed_session(path)
    assert restored == SessionState(prompt="the first", prompt_ids=tuple(range(8000)), steps=4)
