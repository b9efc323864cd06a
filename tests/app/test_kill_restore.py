"""kill -9 a running app, start again, restore: the same tokens come back.

The real app runs as a subprocess, offscreen, on a tiny random Llama folder,
with its store, autosave and settings in the test's folder. It prefills a
prompt and decodes a few steps (hidden `--steps-at-start N`). Once its autosave
shows those steps, the test SIGKILLs it. Then, in this process, a window opens
the way a new start does, the restore question is answered Yes, and the
restored trace must hold the killed run's tokens: the prompt ids the autosave
recorded, followed by the greedy continuation that `explorer.core.decode.Decoder`
computes independently on the same folder.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import transformers  # noqa: E402,F401  (the tiny model is written with it; missing, the run fails, never skips)
from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QMessageBox

from explorer.app.state.session_file import AUTOSAVE_PREFIX, crashed_session
from explorer.app.window.main_window import MainWindow
from explorer.app.window.settings import AppSettings
from tests.app.tiny_model import make_tiny_llama

REPO = Path(__file__).resolve().parents[2]
PROMPT = "To be, or not"
STEPS = 4                       # decoded after the prefill: the trace holds STEPS + 1 steps
AUTOSAVE_WAIT_S = 120.0         # a deadline for failing, not a timing assertion


def app_environment(tmp_path: Path) -> dict[str, str]:
    """Everything the app writes (store, autosave, QSettings, caches) lands in the test's folder."""
    env = dict(os.environ)
    env.update({"QT_QPA_PLATFORM": "offscreen", "TRANSFORMER_EXPLORER_HOME": str(tmp_path / "home"),
                "XDG_CONFIG_HOME": str(tmp_path / "config"), "XDG_CACHE_HOME": str(tmp_path / "cache"),
                "HF_HOME": str(tmp_path / "hf"), "PYTHONPATH": str(REPO)})
    env.pop("TRANSFORMER_EXPLORER_NO_RESTORE", None)
    return env


def start_app(folder: Path, tmp_path: Path) -> tuple[subprocess.Popen, Path]:
    log = tmp_path / "app.log"
    command = [sys.executable, "-m", "explorer", "--model", str(folder), "--prompt", PROMPT, "--no-restore",
               "--steps-at-start", str(STEPS)]
    with open(log, "wb") as out:
        process = subprocess.Popen(command, cwd=REPO, env=app_environment(tmp_path), stdout=out,
                                   stderr=subprocess.STDOUT)
    return process, log


def wait_for_autosave(process: subprocess.Popen, folder: Path, log: Path, steps: int) -> dict:
    """The window's own autosave in `folder` once it records `steps` steps (written atomically, so every
    read is whole); its name carries the process id."""
    deadline = time.monotonic() + AUTOSAVE_WAIT_S
    body: dict = {}
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"the app exited ({process.returncode}) before autosaving:\n{log.read_text()[-3000:]}")
        for path in folder.glob(f"{AUTOSAVE_PREFIX}-{process.pid}-*.json"):
            body = json.loads(path.read_text(encoding="utf-8"))
            if body.get("steps") == steps:
                return body
        time.sleep(0.1)
    pytest.fail(f"no autosave with {steps} steps after {AUTOSAVE_WAIT_S:.0f} s (last: {body}):\n"
                f"{log.read_text()[-3000:]}")


def greedy_ids(folder: Path, prompt_ids, steps: int) -> tuple[list[int], int]:
    """Decode `prompt_ids` greedily for `steps` trace steps with the core alone: all ids fed, and the next choice."""
    from explorer.core.decode import Decoder
    from explorer.core.runtime import load_model

    decoder = Decoder(load_model(str(folder)))
    trace = decoder.prefill(np.asarray(prompt_ids, dtype=np.int64))
    for _ in range(steps - 1):
        trace = decoder.step()
    return trace.token_ids.tolist(), int(trace.steps[-1].chosen_id)


@pytest.fixture
def questions(monkeypatch):
    """The restore question is answered Yes; warnings are collected instead of shown."""
    shown = {"questions": [], "warnings": []}

    def question(parent, title, text, *args):
        shown["questions"].append(text)
        return QMessageBox.StandardButton.Yes

    monkeypatch.setattr(QMessageBox, "question", question)
    monkeypatch.setattr(QMessageBox, "warning", lambda parent, title, text, *a: shown["warnings"].append(text))
    return shown


def test_a_session_killed_with_sigkill_restores_the_same_tokens(qtbot, tmp_path, monkeypatch, questions):
    folder = make_tiny_llama(tmp_path / "models" / "tiny-llama")
    process, log = start_app(folder, tmp_path)
    try:
        saved = wait_for_autosave(process, tmp_path / "home", log, STEPS + 1)
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
    assert process.returncode == -signal.SIGKILL, "killed, so the app had no chance to remove its autosave"
    assert saved["pid"] == process.pid and saved["model"] == str(folder) and saved["prompt"] == PROMPT
    assert saved["forced"] == [] and saved["sampling"]["temperature"] == 0.0, "a plain greedy run"

    expected, next_id = greedy_ids(folder, saved["prompt_ids"], saved["steps"])
    assert len(expected) == len(saved["prompt_ids"]) + STEPS and expected[:len(saved["prompt_ids"])] == \
        saved["prompt_ids"]

    # A new start: the same home (autosave location) and a window built as launch() builds it.
    monkeypatch.setenv("TRANSFORMER_EXPLORER_HOME", str(tmp_path / "home"))
    assert crashed_session() is not None, "the killed run's autosave is found where a new start looks"
    settings = AppSettings(QSettings(str(tmp_path / "restart.ini"), QSettings.Format.IniFormat))
    window = MainWindow(settings=settings, catalog=lambda: [])
    qtbot.addWidget(window)
    window.show()
    try:
        assert window.autosaver.path.parent == tmp_path / "home" and str(process.pid) not in window.autosaver.path.name
        assert window.offer_crash_restore(), "the next start offers the killed session and restores it"
        assert len(questions["questions"]) == 1 and f"{STEPS} decoded tokens" in questions["questions"][0]
        assert not list((tmp_path / "home").glob(f"{AUTOSAVE_PREFIX}-{process.pid}-*.json")), \
            "answered, the dead run's autosave is not offered again"
        qtbot.waitUntil(lambda: window.session.trace is not None and not window.worker.busy
                        and window.controller.loading is None, timeout=60000)
        restored = window.session.trace
        assert questions["warnings"] == []
        assert restored.n_steps == STEPS + 1, "restore replays every decoded step"
        assert restored.token_ids.tolist() == expected
        assert int(restored.steps[-1].chosen_id) == next_id
        assert window.prompt.text == PROMPT
    finally:
        window.close()
