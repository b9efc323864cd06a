"""The app collects garbage on the GUI thread only: automatic collection off, a timer collects."""
import gc
import threading

from PySide6.QtCore import QObject

from explorer.app.thread import gc_guard


def test_automatic_collection_is_off_and_the_timer_collects_on_the_gui_thread(qtbot, monkeypatch):
    threads = []
    monkeypatch.setattr(gc_guard.gc, "collect", lambda generation=2: threads.append(threading.current_thread()))
    parent = QObject()
    gc.enable()
    timer = gc_guard.collect_on_gui_thread(parent)
    try:
        assert not gc.isenabled() and timer.isActive()
        qtbot.waitUntil(lambda: len(threads) >= 1, timeout=5000)
        assert threads[0] is threading.main_thread()
    finally:
        timer.stop()
