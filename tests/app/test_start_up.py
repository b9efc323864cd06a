"""What the cold start leaves out or reorders: the model thread starts before the GUI imports pyqtgraph,
the panels in tabs behind others are built only once shown, and the catalog is listed after the first
prefill rather than beside it."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

from explorer.app.thread.worker import ModelWorker
from explorer.app.window.main_window import PanelDock
from tests.app.fake_core import FakeCore
from tests.app.shared_window import make_window
from tests.app.synthetic_trace import build_trace

REPO = Path(__file__).resolve().parents[2]
HIDDEN_AT_START = ("qkv", "mask", "kv_cache", "kv_lab")          # the bottom tabs behind the embeddings


def run_fresh(script: str) -> dict:
    """Run `script` in a new interpreter (offscreen, from the repository) and read the JSON it prints last."""
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", PYTHONPATH=str(REPO))
    done = subprocess.run([sys.executable, "-c", script], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=180)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_new_window_starts_the_model_thread_before_pyqtgraph_is_imported(tmp_path):
    script = f"""
import json, sys
from PySide6.QtCore import QSettings
from explorer.app.start import launch
from explorer.app.thread import worker
from explorer.app.window.settings import AppSettings
from tests.app.fake_core import FakeCore

seen = {{}}
original = worker.ModelWorker.__init__
def init(self, core=None, parent=None):
    seen["pyqtgraph_imported"] = "pyqtgraph" in sys.modules
    original(self, FakeCore().api(), parent)
worker.ModelWorker.__init__ = init
app = launch.make_app()
settings = AppSettings(QSettings({str(tmp_path / "s.ini")!r}, QSettings.Format.IniFormat))
window = launch.new_window(app, settings, {str(tmp_path / "autosave.json")!r})
seen["worker_owned"] = window.worker.parent() is window
seen["pyqtgraph_imported_after"] = "pyqtgraph" in sys.modules
print(json.dumps(seen))
"""
    seen = run_fresh(script)
    assert seen == {"pyqtgraph_imported": False, "worker_owned": True, "pyqtgraph_imported_after": True}


def test_the_command_line_starts_importing_the_core_before_qt_and_the_worker_adopts_that_thread():
    script = """
import json, sys, threading, time
from explorer.app.thread import preload
preload.start()
seen = {"qt_imported_at_start": "PySide6" in sys.modules}
from PySide6.QtCore import QCoreApplication
from explorer.app.thread.worker import ModelWorker
from tests.app.fake_core import FakeCore
app = QCoreApplication([])
worker = ModelWorker(FakeCore().api())
loaded = []
worker.model_loaded.connect(lambda summary: loaded.append(summary.reference))
worker.load("models/a")
deadline = time.monotonic() + 60
while not loaded and time.monotonic() < deadline:
    app.processEvents(); time.sleep(0.01)
seen["loaded"] = loaded
seen["model_threads"] = sorted(t.name for t in threading.enumerate() if t.name == "model-worker")
seen["same_thread"] = worker._thread is preload._started
seen["core_imported"] = "explorer.core.runtime" in sys.modules
second = ModelWorker(FakeCore().api())           # a second window's worker starts a thread of its own
seen["second_own_thread"] = second._thread is not preload._started and second._thread.is_alive()
print(json.dumps(seen))
"""
    seen = run_fresh(script)
    assert seen == {"qt_imported_at_start": False, "loaded": ["models/a"], "model_threads": ["model-worker"],
                    "same_thread": True, "core_imported": True, "second_own_thread": True}


def test_tabs_behind_others_are_built_when_first_shown_and_then_draw_the_trace(qtbot, tmp_path):
    window = make_window(qtbot, tmp_path)
    try:
        qtbot.waitUntil(lambda: window.docks["embeddings"].built and window.docks["attention"].built, timeout=5000)
        assert all(isinstance(dock, PanelDock) for dock in window.docks.values())
        from explorer.app.window.dock_layout import area_of

        behind = [name for name in window.docks if area_of(name) == "bottom"][1:]   # every bottom tab but the first
        lazy = [name for name, dock in window.docks.items() if not dock.built]
        assert lazy == behind and lazy[:len(HIDDEN_AT_START)] == list(HIDDEN_AT_START)
        window.session.set_trace(build_trace(n_layers=2, prompt_len=5, steps=2))
        dock = window.docks["kv_cache"]
        dock.raise_()
        qtbot.waitUntil(lambda: dock.built, timeout=5000)
        panel = dock.widget()
        assert panel.objectName() == "kv_cache" and panel.is_shown()
        qtbot.waitUntil(lambda: "in use" in panel.header.text() or panel.formula != "", timeout=5000)
        assert not panel._dirty, "a panel built on its first showing draws the trace at once"
        assert not window.docks["kv_lab"].built
        back = window.docks["mask"].widget()                 # asked for while behind a tab: built, not drawn
        assert window.docks["mask"].built and back.isVisible() and not back.is_shown()
        assert back._dirty
    finally:
        window.close()


def test_the_catalog_is_listed_once_the_first_prefill_is_done(qtbot, tmp_path):
    core = FakeCore()
    core.gate = threading.Event()                            # holds the prefill until released
    listed = []

    def catalog():
        listed.append(window.session.trace is not None)
        return []

    window = make_window(qtbot, tmp_path, worker=ModelWorker(core.api()), catalog=catalog)
    try:
        qtbot.waitUntil(lambda: len(listed) == 1, timeout=5000)      # the start's own listing, nothing loaded
        window.prompt.set_text("To be")
        window.open_model("fake-model")
        qtbot.waitUntil(lambda: window.controller.summary is not None and window.worker.busy, timeout=5000)
        qtbot.wait(300)
        assert listed == [False], "listed again while the first prefill was running"
        core.gate.set()
        qtbot.waitUntil(lambda: len(listed) == 2 and not window.catalog_loader.busy, timeout=5000)
        assert listed == [False, True]
    finally:
        core.gate.set()
        window.close()
