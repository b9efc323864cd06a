"""The decode loop says which request it is running (`DecodeLoop.seq`, read by the worker as a Load switches models)
and nobody else sets it: the seq the queue numbered the request with, read while that request runs."""
from __future__ import annotations

import threading

import pytest

from explorer.app.thread.decode_loop import DecodeLoop
from explorer.app.thread.emitter import Emitter
from explorer.app.thread.request_queue import RequestQueue
from explorer.app.thread.requests import Load, ModelJob
from tests.app.fake_core import FakeCore


def test_the_loop_reads_out_the_seq_of_the_request_running(qapp):
    queue, emitter = RequestQueue(), Emitter()
    loop = DecodeLoop(queue, emitter, FakeCore().api())
    assert loop.seq == -1, "no request has run"
    with pytest.raises(AttributeError):
        loop.seq = 7                                        # read-only: the loop alone sets it
    seen, done = [], threading.Event()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    queue.push(Load("models/a"))
    numbered = []
    for _ in range(2):
        numbered.append(queue.pushed())                     # the seq the queue gives the next request
        queue.push(ModelJob(lambda loaded, cancelled: (seen.append(loop.seq), done.set())))
        assert done.wait(10), "the job never ran"
        done.clear()
    queue.close()
    thread.join(10)
    assert seen == numbered
