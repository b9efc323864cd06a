"""Quitting stops and joins every thread: the app exits 0 after a run with a busy tab, even while the model
thread is inside a long torch call that cannot be interrupted (a daemon thread left in torch when the
interpreter finalises aborted the process: "terminate called without an active exception", exit 134)."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import transformers  # noqa: E402,F401  (the tiny model is written with it; missing, the run fails, never skips)

from tests.app.tiny_model import make_tiny_llama

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = textwrap.dedent("""
    import sys, threading, time
    from pathlib import Path
    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QApplication

    app = QApplication([])
    from explorer.app.window.main_window import MainWindow
    from explorer.app.window.settings import AppSettings

    home, model = Path(sys.argv[1]), sys.argv[2]
    settings = AppSettings(QSettings(str(home / "settings.ini"), QSettings.Format.IniFormat))
    window = MainWindow(settings=settings, autosave_path=home / "autosave.json", catalog=lambda: [])
    window.show()
    window.prompt.set_text("To be, or not to be")
    window.open_model(model)

    def settle(condition, timeout_s=120.0):
        deadline = time.monotonic() + timeout_s
        while not condition():
            assert time.monotonic() < deadline, "the window did not settle"
            app.processEvents()
            time.sleep(0.005)

    settle(lambda: window.session.trace is not None and not window.worker.busy)
    for name in ("experiments", "atlas", "attribution", "attention"):       # tabs with work of their own
        window.docks[name].show()
        window.docks[name].raise_()
    started = threading.Event()

    def long_torch_call(loaded, cancelled):                                 # deaf to cancel, like one big op
        import torch
        started.set()
        x = torch.randn(256, 256)
        end = time.monotonic() + 6.0
        while time.monotonic() < end:
            x = torch.tanh(x @ x)
        print("the long job ended", flush=True)

    window.session.model_job_requested.emit(long_torch_call)
    settle(started.is_set)
    window.close()                  # as the person quits: the job is still running
    app.processEvents()
    print("closed", flush=True)
    from explorer.app.start.launch import tear_down
    tear_down(window)               # what launch() does once its event loop has returned
""")


def test_the_app_exits_0_with_a_long_job_running_and_every_thread_joined(tmp_path):
    tiny = make_tiny_llama(tmp_path / "tiny-llama")
    script = tmp_path / "quit_while_busy.py"
    script.write_text(SCRIPT)
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", TRANSFORMER_EXPLORER_HOME=str(tmp_path / "store"),
               PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, str(script), str(tmp_path), str(tiny)], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "terminate called" not in done.stderr
    lines = done.stdout.splitlines()
    assert lines[-2:] == ["closed", "the long job ended"], done.stdout     # joined before the process ended
