"""Quitting stops a tab's own thread: a job a panel runs beside the model thread (the head atlas's reading of
a long trace, the KV lab's what-if on a script's model: `model_call.thread_executor`) is asked to stop and
joined when the window closes, so the app exits 0. Such a thread was never told to stop: still in torch
when the interpreter finalised, it aborted the process ("terminate called without an active exception",
exit 134) after the figures of a long run had printed."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import transformers  # noqa: F401  (the tiny model is written with it; missing, the run fails, never skips)

from tests.app.tiny_model import make_tiny_llama

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = textwrap.dedent("""
    import sys, threading, time
    from pathlib import Path
    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QApplication

    app = QApplication([])
    from explorer.app.start.launch import tear_down
    from explorer.app.thread import threads
    from explorer.app.widgets.model_call import ModelCall, thread_executor
    from explorer.app.window.main_window import MainWindow
    from explorer.app.window.settings import AppSettings

    threads.JOIN_S = 60.0           # a thread deaf to stop fails the run in a minute, not two
    home, model = Path(sys.argv[1]), sys.argv[2]
    settings = AppSettings(QSettings(str(home / "settings.ini"), QSettings.Format.IniFormat))
    window = MainWindow(settings=settings, autosave_path=home / "autosave.json", catalog=lambda: [])
    window.show()
    window.prompt.set_text("To be, or not to be, that is the question: Whether 'tis nobler in the mind")
    window.open_model(model)

    def settle(condition, timeout_s=120.0):
        deadline = time.monotonic() + timeout_s
        while not condition():
            assert time.monotonic() < deadline, "the window did not settle"
            app.processEvents()
            time.sleep(0.005)

    settle(lambda: window.session.trace is not None and not window.worker.busy)
    for _ in range(8):              # a longer run: steps decoded and drawn
        window.worker.step()
    settle(lambda: window.session.trace.n_steps >= 9 and not window.worker.busy)
    atlas = window.docks["atlas"]
    atlas.show()
    atlas.raise_()
    started = threading.Event()

    def reading(_loaded, _progress, cancel):        # a tab's own torch work, block by block until cancelled
        import torch
        started.set()
        x = torch.randn(256, 256)
        while not cancel.is_set():
            x = torch.tanh(x @ x)
        print("the tab's job stopped", flush=True)

    call = ModelCall(atlas.widget())
    call.start(reading, thread_executor(None))
    settle(started.is_set)
    window.close()                  # as the person quits: the tab's job is still running
    app.processEvents()
    tear_down(window)               # what launch() does once its event loop has returned
    print("closed", flush=True)
""")


def test_the_app_exits_0_when_a_tab_is_busy_on_a_thread_of_its_own(tmp_path):
    tiny = make_tiny_llama(tmp_path / "tiny-llama")
    script = tmp_path / "quit_with_busy_tab.py"
    script.write_text(SCRIPT)
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", TRANSFORMER_EXPLORER_HOME=str(tmp_path / "store"),
               HOME=str(tmp_path / "home"), XDG_CONFIG_HOME=str(tmp_path / "home" / ".config"),
               PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, str(script), str(tmp_path), str(tiny)], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert "terminate called" not in done.stderr, done.stderr[-2000:]
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines()[-1] == "the tab's job stopped", done.stdout     # joined before the end
