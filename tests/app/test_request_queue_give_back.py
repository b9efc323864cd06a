"""The queue's side of a give-back: the model thread's Replay of the trace the window shows goes first.

A read of the decoder (candidates, the logit lens) queued before the give-back must still run after it, a
cancel that keeps the window's trace keeps the give-back, one that discards the traces drops it, and a
queued load, prefill or replay, which set the decoder anew, make it needless.
"""
from __future__ import annotations

import pytest

from explorer.app.thread.request_queue import RequestQueue
from explorer.app.thread.requests import Candidates, Load, LogitLens, Prefill, Replay, SetSampling, Step

SHOWN = Replay(ids=(1, 2, 3), forced=((1, 7),), n_steps=3)


def _running(queue: RequestQueue, request):
    queue.push(request)
    return queue.take()


def test_the_give_back_goes_before_the_reads_already_queued():
    queue = RequestQueue()
    running = _running(queue, Prefill(ids=(4, 5)))
    queue.push(Candidates(position=1))
    queue.push(LogitLens(position=0))
    assert queue.give_back(SHOWN)
    pending = queue.pending()
    assert [type(r) for r in pending] == [Replay, Candidates, LogitLens]
    assert pending[0].give_back and pending[0].ids == SHOWN.ids and pending[0].n_steps == SHOWN.n_steps
    assert queue.finish(running) == -1, "not idle: the give-back and the reads are still to run"
    assert queue.plan() == (len(SHOWN.ids) + SHOWN.n_steps - 1, 0), "the trace is headed back to the one shown"


@pytest.mark.parametrize("queued", [Load(path="m"), Prefill(ids=(9,)), Replay(ids=(9,))],
                         ids=["a load", "a run", "a replay"])
def test_no_give_back_when_a_queued_request_sets_the_decoder_anew(queued):
    queue = RequestQueue()
    _running(queue, Step())
    queue.push(queued)
    assert not queue.give_back(SHOWN)
    assert [type(r) for r in queue.pending()] == [type(queued)]
    assert not any(getattr(r, "give_back", False) for r in queue.pending())


def test_a_cancel_keeps_the_give_back_and_a_discarding_one_drops_it():
    queue = RequestQueue()
    _running(queue, Step())
    queue.give_back(SHOWN)
    queue.push(SetSampling(sampling=None))
    queue.push(Candidates(position=1))
    queue.cancel()
    assert [type(r) for r in queue.pending()] == [Replay, SetSampling], "the give-back went with the Stop"
    assert queue.discarded_through() == -1
    pushed = queue.pushed()
    queue.cancel(discard=True)
    assert [type(r) for r in queue.pending()] == [SetSampling]
    assert queue.discarded_through() == pushed - 1, "the traces of every request asked so far are dropped"


def test_the_windows_equal_replay_joins_the_running_give_back():
    queue = RequestQueue()
    running = _running(queue, Step())
    queue.give_back(SHOWN)
    queue.finish(running)
    give_back = queue.take()
    queue.push(SHOWN)
    assert not queue.is_cancelled(give_back), "the window's equal replay cancelled the give-back running"
    assert queue.pending() == []
