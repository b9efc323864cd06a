"""The app in a child process, for the tests that quit it while something runs (tests/app/test_quit*.py).

A quit is judged by the process's exit: a daemon thread still inside torch when the interpreter finalises
aborts it ("terminate called without an active exception", exit 134), and a thread that ignores its stop
keeps it waiting (threads.JOIN_S, then "Waiting for ... to finish before quitting."). So each test writes
its own steps after PRELUDE, which builds the window with its settings, store and autosave in the test's
folder, and runs it with `run_child`.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PRELUDE = textwrap.dedent("""
    import sys, threading, time
    from pathlib import Path
    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QApplication

    app = QApplication([])
    from explorer.app.start.launch import tear_down
    from explorer.app.thread import threads
    from explorer.app.window.main_window import MainWindow
    from explorer.app.window.settings import AppSettings

    home, model, threads.JOIN_S = Path(sys.argv[1]), sys.argv[2], float(sys.argv[3])
    settings = AppSettings(QSettings(str(home / "settings.ini"), QSettings.Format.IniFormat))
    window = MainWindow(settings=settings, autosave_path=home / "autosave.json", catalog=lambda: [])
    window.show()
    devices = []                    # the model thread's first answer: it has imported torch and waits for requests
    window.worker.devices_found.connect(devices.append)

    def settle(condition, timeout_s=120.0):
        deadline = time.monotonic() + timeout_s
        while not condition():
            assert time.monotonic() < deadline, "the window did not settle"
            app.processEvents()
            time.sleep(0.005)

    def open_and_run(prompt):
        window.prompt.set_text(prompt)
        window.open_model(model)
        settle(lambda: window.session.trace is not None and not window.worker.busy)

    def model_thread_waiting():
        '''Past its start (torch imported, devices listed), which no quit can cut short.'''
        settle(lambda: devices)

    def quit_app():
        '''As the person quits: the window closes, then what launch() does once its event loop returned.'''
        window.close()
        app.processEvents()
        tear_down(window)
""")


def run_child(tmp_path: Path, steps: str, model: str = "", join_s: float = 60.0,
              timeout_s: float = 600.0) -> subprocess.CompletedProcess:
    """Run PRELUDE + `steps` (dedented) in a child Python with `model` as the model to open; its home, store
    and settings lie in `tmp_path`. A thread deaf to stop fails the run in `join_s`, not threads.JOIN_S."""
    script = tmp_path / "quit_child_steps.py"
    script.write_text(PRELUDE + textwrap.dedent(steps))
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", TRANSFORMER_EXPLORER_HOME=str(tmp_path / "store"),
               HOME=str(tmp_path / "home"), XDG_CONFIG_HOME=str(tmp_path / "home" / ".config"),
               PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, str(script), str(tmp_path), str(model), str(join_s)], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout_s)


def assert_clean_exit(done: subprocess.CompletedProcess) -> None:
    """Exit 0, no abort from a thread left in torch, and no thread that died with a traceback (one that
    reported to a window deleted under it: its work was cut off, not stopped)."""
    assert "terminate called" not in done.stderr, done.stderr[-2000:]
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
    assert done.returncode == 0, done.stderr[-2000:]
