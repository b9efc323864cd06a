"""What the model thread runs and what waits (ModelWorker.jobs_changed, read by the Next token panel) is the queue's
state as the news arrives: the model thread's own snapshot, queued behind the GUI's pushes, undid a job pushed since,
and the panel then said no before → after was asked while one waited behind the head atlas (issue 22)."""
from __future__ import annotations

import threading

import pytest

from explorer.app.thread.worker import ModelWorker
from tests.app.fake_core import FakeCore
from tests.app.test_worker import loaded


@pytest.fixture
def worker(qtbot):
    w = ModelWorker(FakeCore().api())
    yield w
    assert w.shutdown(5.0)


def _job(what: str, hold: threading.Event | None = None, started: threading.Event | None = None):
    def work(loaded, cancelled) -> None:
        if started is not None:
            started.set()
        if hold is not None:
            hold.wait(20)
    work.what = what
    return work


def test_the_news_of_the_jobs_is_the_queue_as_it_arrives(qtbot, worker):
    loaded(qtbot, worker)
    hold, started = threading.Event(), threading.Event()
    worker.run_job(_job("the head atlas's scoring", hold, started))
    qtbot.waitUntil(started.is_set, timeout=10000)
    qtbot.wait(100)                                     # the model thread's news of the atlas starting has arrived
    news = []
    worker.jobs_changed.connect(news.append)
    worker.run_job(_job("the before/after comparison"))
    try:
        # the model thread's snapshot taken as the atlas started, delivered after the comparison was pushed
        worker._emitter.jobs_changed.emit({"running": "the head atlas's scoring", "queued": ()})
        qtbot.waitUntil(lambda: len(news) >= 2, timeout=5000)
        assert news[-1] == {"running": "the head atlas's scoring", "queued": ("the before/after comparison",)}, news
    finally:
        hold.set()
    qtbot.waitUntil(lambda: not worker.busy, timeout=10000)
