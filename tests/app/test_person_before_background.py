"""A person's direct action goes ahead of the panels' background work on the model thread (issue 22): an Alt-click's
replay (or Run, Step) is taken before a head atlas or attribution job queued, and a job running that checks its
cancel flag yields to it and runs again after; both end with the answers the model gives unqueued."""
from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from explorer.app.thread.core_api import CoreApi
from explorer.app.thread.request_queue import RequestQueue
from explorer.app.thread.requests import HeadScoresJob, ModelJob, Prefill, SetIntervention, Step
from explorer.app.thread.worker import ModelWorker
from explorer.core.intervention import HeadAblation, Intervention
from tests.app.test_experiments_worker import _top_probs_after
from tests.app.test_replay_waits_behind_job import HeldJob, _start
from tests.app.test_worker import loaded, run
from tests.core.tiny_checkpoints import write_hf_folder

pytestmark = pytest.mark.usefixtures("store_home")

ABLATE = Intervention(ablations=(HeadAblation(1, 0),))


def _job(what: str) -> ModelJob:
    def work(loaded, cancelled) -> None:
        pass
    work.what = what
    return ModelJob(job=work)


def test_the_queue_takes_a_persons_requests_before_the_panels_jobs_and_in_their_own_order():
    queue = RequestQueue()
    queue.push(Prefill(ids=(1, 2)))
    queue.push(_job("the head atlas's scoring"))
    queue.push(Step())
    queue.push(_job("an attribution"))
    queue.push(Step())                          # merged with the Step queued before the jobs
    queue.push(SetIntervention(intervention=ABLATE))
    taken = [type(queue.take()).__name__ for _ in range(5)]
    assert taken == ["Prefill", "Step", "SetIntervention", "ModelJob", "ModelJob"]


def test_jobs_and_jobs_ahead_read_the_same_order():
    queue = RequestQueue()
    queue.push(_job("the head atlas's scoring"))
    running = queue.take()
    queue.push(_job("the before/after comparison"))
    queue.push(SetIntervention(intervention=ABLATE))        # the Alt-click's redo, a run of the prompt
    assert queue.jobs() == {"running": "the head atlas's scoring", "queued": ("the before/after comparison",)}
    assert queue.jobs_ahead() == ["the head atlas's scoring"], "only the job running is still ahead of it"
    assert queue.yields(running)
    queue.cancel()                                          # a cancelled job is ahead of nothing
    assert queue.jobs()["running"] is None and queue.jobs_ahead() == []


@pytest.fixture
def worker(qtbot, tmp_path):
    write_hf_folder(tmp_path)
    w = ModelWorker(CoreApi.real())
    loaded(qtbot, w, str(tmp_path))
    run(qtbot, w, lambda: w.prefill([5, 9, 13, 40, 41]))
    run(qtbot, w, lambda: w.step(3))
    yield w, str(tmp_path)
    assert w.shutdown(10.0)


def _arrivals(worker, answers) -> list:
    """The order the answers arrive in: "trace" for each trace the model thread hands back, "atlas" for the job's."""
    order = []
    worker.trace_ready.connect(lambda _trace: order.append("trace"))
    answers_seen = len(answers)

    def poll() -> bool:
        nonlocal answers_seen
        if len(answers) > answers_seen:
            order.append("atlas")
            answers_seen = len(answers)
        return "atlas" in order and "trace" in order
    return order, poll


def _check(worker, folder, traces, atlas_answers) -> None:
    assert atlas_answers and atlas_answers[0][0] == "ok", atlas_answers
    assert atlas_answers[0][1].induction.shape[0] == 2
    branched = traces[-1]
    assert branched.n_steps == 4
    np.testing.assert_allclose(branched.steps[-1].top_probs[0], _top_probs_after(folder, branched.token_ids, ABLATE),
                               atol=1e-5)


def test_an_alt_click_replay_goes_ahead_of_an_atlas_job_queued(qtbot, worker):
    worker, folder = worker
    holder = HeldJob(lambda loaded, progress, cancel: "held")      # a job that never checks its cancel flag
    _held_call, _held = _start(holder, worker)
    qtbot.waitUntil(holder.started.is_set, timeout=10000)
    atlas_call, atlas_answers = _start(HeadScoresJob(), worker)     # queued behind it
    traces = []
    worker.trace_ready.connect(traces.append)
    order, poll = _arrivals(worker, atlas_answers)
    worker.set_intervention(ABLATE)                                 # Alt-click: ablate a head, run the prompt again
    holder.release.set()
    qtbot.waitUntil(poll, timeout=30000)
    qtbot.waitUntil(lambda: not worker.busy, timeout=30000)
    assert order[0] == "trace", f"the atlas queued before the Alt-click answered first: {order}"
    _check(worker, folder, traces, atlas_answers)
    del atlas_call


class CuttableAtlas:
    """The head atlas's scoring, which checks its cancel flag while it runs (as score_heads does between layers):
    the first run keeps checking for up to 20 s; any later one scores at once."""

    what = HeadScoresJob.what

    def __init__(self) -> None:
        self.runs, self.started = 0, threading.Event()

    def __call__(self, loaded, progress, cancel):
        self.runs += 1
        self.started.set()
        deadline = time.monotonic() + 20
        while self.runs == 1 and time.monotonic() < deadline:
            if cancel.is_set():
                raise RuntimeError("cancelled")         # a cut that answers would fail the atlas: never reached
            time.sleep(0.01)
        return HeadScoresJob()(loaded, progress, cancel)


def test_an_atlas_job_running_yields_to_an_alt_click_replay_and_runs_again_after(qtbot, worker):
    worker, folder = worker
    atlas = CuttableAtlas()
    atlas_call, atlas_answers = _start(atlas, worker)
    qtbot.waitUntil(atlas.started.is_set, timeout=10000)
    traces = []
    worker.trace_ready.connect(traces.append)
    order, poll = _arrivals(worker, atlas_answers)
    pressed = time.monotonic()
    worker.set_intervention(ABLATE)
    qtbot.waitUntil(lambda: bool(traces), timeout=10000)
    assert time.monotonic() - pressed < 10, "the replay waited for the atlas's whole run"
    qtbot.waitUntil(poll, timeout=30000)
    qtbot.waitUntil(lambda: not worker.busy, timeout=30000)
    assert order[0] == "trace", order
    assert atlas.runs == 2 and len(atlas_answers) == 1, (atlas.runs, atlas_answers)
    _check(worker, folder, traces, atlas_answers)
    del atlas_call
