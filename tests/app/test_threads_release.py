"""What an app thread ran is let go on the GUI thread, never on the thread itself (explorer/app/thread/threads.py).

Seen (a loaded machine, a window closed as its grid filled): the filling thread ended holding the last reference to
the grid filler's Python side, freed it there, and PySide's disconnection of its slots raced the GUI thread:
SIGSEGV in QMetaObject::Connection::~Connection on that thread. Expectation: the object a thread's work holds is
freed only when the GUI thread calls release_finished, and on that thread.
"""
from __future__ import annotations

import threading
import weakref

import numpy as np

from explorer.app.thread import threads
from explorer.app.widgets.grid_filler import GridFiller
from tests.app.synthetic_trace import build_trace


class Held:
    """An object whose finaliser says the thread it was freed on."""


def freed_on(thing) -> list:
    threads_seen: list = []
    weakref.finalize(thing, lambda: threads_seen.append(threading.current_thread()))
    return threads_seen


def test_an_object_only_a_finished_thread_held_is_freed_when_the_gui_thread_lets_go():
    held = Held()
    seen = freed_on(held)
    thread = threads.start(lambda held=held: None, "test-holder")
    del held
    thread.join(10)
    assert not thread.is_alive()
    assert seen == [], f"freed on {seen[0].name} as it ended" if seen else ""
    threads.release_finished()
    assert seen == [threading.main_thread()], seen


def test_a_grid_filler_let_go_by_the_gui_is_freed_on_the_gui_thread_after_its_thread_ends(qapp, monkeypatch):
    trace = build_trace(n_layers=2, n_heads=2, prompt_len=6)
    filler = GridFiller()
    release, started = threading.Event(), []
    start_thread = threads.start

    def tile(trace, layer, heads, *args):
        release.wait(10)                          # the window lets go of the filler meanwhile
        return np.zeros((1, 1), np.float32)

    def start(target, name, stop=lambda: None):
        started.append(start_thread(target, name, stop))
        return started[-1]

    monkeypatch.setattr(filler.tiles, "get", tile)
    monkeypatch.setattr(threads, "start", start)
    filler.start(trace, None, False, "weights")
    seen = freed_on(filler)
    del filler
    release.set()
    started[0].join(10)
    assert not started[0].is_alive()
    assert seen == [], f"the filler was freed on {seen[0].name}" if seen else ""
    threads.release_finished()
    qapp.processEvents()
    assert seen == [threading.main_thread()], seen


def test_a_panels_job_the_model_thread_ran_is_let_go_on_the_gui_thread(qapp):
    """The model thread kept the request it last ran until the next came, and dropped it there: a job's
    references (a panel's call, a Qt object) were freed on the model thread."""
    from explorer.app.thread.decode_loop import DecodeLoop
    from explorer.app.thread.emitter import Emitter
    from explorer.app.thread.request_queue import RequestQueue
    from explorer.app.thread.requests import Load, ModelJob
    from tests.app.fake_core import FakeCore

    queue, emitter = RequestQueue(), Emitter()
    loop = DecodeLoop(queue, emitter, FakeCore().api())
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    queue.push(Load("models/a"))
    held, done = Held(), threading.Event()
    seen = freed_on(held)
    queue.push(ModelJob(lambda loaded, cancelled, held=held: done.set()))
    del held
    assert done.wait(10), "the job never ran"
    queue.push(ModelJob(lambda loaded, cancelled: None))             # the next request takes the last one's place
    queue.close()
    thread.join(10)
    assert seen == [], f"the job was freed on {seen[0].name}" if seen else ""
    threads.release_finished()
    assert seen == [threading.main_thread()], seen


def test_a_pauses_event_carries_no_weak_reference_of_pysides(qapp, qtbot):
    """A load's Pause hands the GUI an Event to set once the window had time to paint; the model thread drops it
    when it has waited. A Qt timer given the Event's bound method made PySide hang a weak reference on it, whose
    callback (a disconnection) then ran on the model thread: SIGSEGV in Connection's destructor under gdb."""
    from explorer.app.thread.worker import ModelWorker
    from tests.app.fake_core import FakeCore

    worker = ModelWorker(core=FakeCore().api())
    try:
        shown = threading.Event()
        worker._on_pausing(0.5, "writing a copy", shown)
        assert weakref.getweakrefcount(shown) == 0, "PySide holds the Event by a weak reference"
        qtbot.waitUntil(shown.is_set, timeout=5000)              # and sets it once the window had its time
    finally:
        assert worker.shutdown(5.0)
