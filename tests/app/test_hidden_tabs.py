"""Work the window skips: panels in dock tabs behind another tab do not redraw on every step (Qt still calls
them visible, it only moves them out of sight), and the catalog is listed only after the worker has imported
the core (two threads importing torch at once break its import)."""
from __future__ import annotations

import threading

from explorer.app.thread.core_api import CoreApi
from explorer.app.thread.worker import ModelWorker
from tests.app.fake_core import FakeCore
from tests.app.shared_window import make_window
from tests.app.synthetic_trace import build_trace


def count_redraws(panel) -> list:
    calls = []
    original = panel.redraw
    panel.redraw = lambda: (calls.append(1), original())[1]
    return calls


def test_a_panel_behind_another_tab_redraws_only_when_its_tab_is_raised(qtbot, tmp_path):
    window = make_window(qtbot, tmp_path)
    try:
        front, back = window.docks["embeddings"], window.docks["mask"]
        assert back in window.tabifiedDockWidgets(front)
        front.raise_()
        qtbot.waitUntil(lambda: front.widget().is_shown() and not back.widget().is_shown(), timeout=5000)
        assert back.widget().isVisible(), "Qt calls a tab behind another visible: is_shown must not"
        shown, hidden = count_redraws(front.widget()), count_redraws(back.widget())
        for steps in range(3):
            window.session.set_trace(build_trace(n_layers=2, prompt_len=5, steps=steps))
        assert len(shown) == 3 and hidden == []
        back.raise_()
        qtbot.waitUntil(lambda: len(hidden) == 1, timeout=5000)
        assert back.widget().mask is not None and back.widget().mask.shape == (7, 7)
    finally:
        window.close()


def test_the_catalog_waits_for_the_worker_to_import_the_core(qtbot, tmp_path):
    imported = threading.Event()
    fake = FakeCore().api()

    def devices():
        assert imported.wait(20)
        return {"cpu": ["float32"]}

    listed_before_import = []

    def catalog():
        listed_before_import.append(not imported.is_set())
        return []

    api = CoreApi(load_model=fake.load_model, make_decoder=fake.make_decoder, sampling=fake.sampling,
                  available_devices=devices)
    window = make_window(qtbot, tmp_path, worker=ModelWorker(api), catalog=catalog)
    try:
        qtbot.wait(300)
        assert listed_before_import == []
        imported.set()
        qtbot.waitUntil(lambda: listed_before_import == [False], timeout=5000)
    finally:
        imported.set()
        window.close()
