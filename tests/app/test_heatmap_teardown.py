"""A heat map left for the interpreter's shutdown to tear down ends quietly.

A process that exited without deleting its window printed a traceback at shutdown: Qt resized a plot's title
(FittingTitle) after its text item was deleted, and the title fitted its text into the deleted item.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import shiboken6
from PySide6.QtWidgets import QGraphicsSceneResizeEvent

from explorer.drawing.plot_title import FittingTitle

ROOT = Path(__file__).resolve().parents[2]
PLUGIN_NOTE = "This plugin does not support propagateSizeHints()"     # the offscreen platform's, at every show

CHILD = textwrap.dedent(f"""
    import sys, tempfile, time
    from pathlib import Path
    from PySide6.QtCore import QSettings, qInstallMessageHandler
    from PySide6.QtGui import QFont
    from PySide6.QtWidgets import QApplication

    def note(kind, context, message):
        if message != {PLUGIN_NOTE!r}:
            sys.stderr.write(message + "\\n")

    qInstallMessageHandler(note)
    app = QApplication([])
    from explorer.app.thread.worker import ModelWorker
    from explorer.app.window.main_window import MainWindow
    from explorer.app.window.settings import AppSettings
    from tests.app.fake_core import FakeCore
    from tests.app.synthetic_trace import build_trace

    scratch = Path(sys.argv[1])
    settings = AppSettings(QSettings(str(scratch / "settings.ini"), QSettings.Format.IniFormat))
    window = MainWindow(worker=ModelWorker(FakeCore().api()), settings=settings,
                        autosave_path=scratch / "autosave.json", catalog=lambda: [])
    window.resize(1200, 800)
    window.show()
    window.session.set_trace(build_trace(n_layers=2, prompt_len=5, steps=3))

    def settle(seconds):
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            app.processEvents()

    settle(1.0)
    larger = QFont(app.font())
    larger.setPointSizeF(larger.pointSizeF() * 1.4)       # as View > Presentation does
    app.setFont(larger)
    settle(0.5)
    print("font changed", flush=True)
    # No close, no delete: the window, its heat maps and the application are left to the interpreter.
""")


def test_a_process_that_leaves_its_heat_maps_to_the_shutdown_exits_quietly(tmp_path):
    script = tmp_path / "leave_the_window.py"
    script.write_text(CHILD)
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", TRANSFORMER_EXPLORER_HOME=str(tmp_path / "store"),
               PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, str(script), str(tmp_path)], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.stdout.splitlines()[-1:] == ["font changed"], done.stdout + done.stderr[-2000:]
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stderr == "", done.stderr[-2000:]


def test_a_title_resized_after_its_text_item_is_deleted_does_nothing(qtbot):
    """What the shutdown did: the title's text item deleted first, then the title resized (through pyqtgraph's
    layout). Raising there (RuntimeError: already deleted) printed the traceback; the title has nothing to fit."""
    title = FittingTitle("the attention weights of layer 3, head 5, over 4,000 tokens")
    title.resize(60, 20)
    shiboken6.delete(title.item)
    title.resizeEvent(QGraphicsSceneResizeEvent())
    assert title.text == "the attention weights of layer 3, head 5, over 4,000 tokens"
