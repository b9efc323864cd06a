"""The model thread: requests queue and coalesce, traces come back whole, errors come back as sentences."""
from __future__ import annotations

import threading

import pytest

from explorer.app.thread.request_queue import RequestQueue
from explorer.app.thread.requests import Back, Load, Prefill, SetSampling, Step
from explorer.app.thread.worker import ModelWorker, SamplingSettings
from tests.app.fake_core import FakeCore


@pytest.fixture
def core():
    return FakeCore()


@pytest.fixture
def worker(qtbot, core):
    w = ModelWorker(core.api())
    yield w
    assert w.shutdown(5.0)


def run(qtbot, worker, action):
    """Do `action`, then wait until the worker is idle again; return the last trace it handed back."""
    traces = []
    worker.trace_ready.connect(traces.append)
    action()
    qtbot.waitUntil(lambda: not worker.busy, timeout=10000)
    worker.trace_ready.disconnect(traces.append)
    return traces[-1] if traces else None


def loaded(qtbot, worker, path="models/a"):
    with qtbot.waitSignal(worker.model_loaded, timeout=10000) as blocker:
        worker.load(path)
    return blocker.args[0]


def test_load_reports_the_model_without_torch_objects(qtbot, worker):
    summary = loaded(qtbot, worker)
    assert summary.name == "a" and summary.info.n_layers == 2 and summary.device == "cpu"
    assert summary.tokenizer.encode("hi").ids.tolist() == [1, ord("h") % 50, ord("i") % 50]


def test_three_steps_grow_the_trace_by_three(qtbot, worker):
    loaded(qtbot, worker)
    first = run(qtbot, worker, lambda: worker.prefill([1, 5, 6]))
    assert first.n_steps == 1 and first.n_tokens == 3
    last = run(qtbot, worker, lambda: [worker.step() for _ in range(3)])
    assert last.n_steps == 4 and last.n_tokens == 6
    assert last.steps[:1] == first.steps, "old records are shared, not changed"


def test_back_restores_the_previous_trace_exactly(qtbot, worker):
    loaded(qtbot, worker)
    run(qtbot, worker, lambda: worker.prefill([1, 5, 6]))
    before = run(qtbot, worker, worker.step)
    run(qtbot, worker, worker.step)
    after = run(qtbot, worker, worker.back)
    assert after.steps == before.steps


def test_back_never_drops_the_prefill(qtbot, worker, core):
    loaded(qtbot, worker)
    run(qtbot, worker, lambda: worker.prefill([1, 5]))
    run(qtbot, worker, lambda: worker.back(3))
    assert core.decoders[-1].trace.n_steps == 1


def test_steps_pressed_while_one_runs_are_coalesced_and_none_is_lost(qtbot, worker, core):
    loaded(qtbot, worker)
    run(qtbot, worker, lambda: worker.prefill([1, 5]))
    core.decoders[-1].gate = gate = threading.Event()
    worker.step()
    qtbot.waitUntil(lambda: core.decoders[-1].calls[-1] == "step")   # the first step is in flight
    for _ in range(5):
        worker.step()
    worker.back()
    assert worker.pending_steps() == 4
    gate.set()
    qtbot.waitUntil(lambda: not worker.busy, timeout=10000)
    assert core.decoders[-1].trace.n_steps == 1 + 1 + 4
    assert core.decoders[-1].calls.count("back") == 0


def test_a_new_prompt_cancels_the_steps_of_the_old_one(qtbot, worker, core):
    loaded(qtbot, worker)
    run(qtbot, worker, lambda: worker.prefill([1, 5]))
    core.decoders[-1].gate = gate = threading.Event()
    worker.step(50)
    qtbot.waitUntil(lambda: core.decoders[-1].calls[-1] == "step")
    worker.prefill([1, 7, 8, 9])
    gate.set()
    qtbot.waitUntil(lambda: not worker.busy, timeout=10000)
    trace = core.decoders[-1].trace
    assert trace.n_steps == 1 and trace.token_ids.tolist() == [1, 7, 8, 9]


def test_force_branches_at_the_step_the_person_saw(qtbot, worker, core):
    loaded(qtbot, worker)
    run(qtbot, worker, lambda: worker.prefill([1, 5]))
    run(qtbot, worker, lambda: worker.step(2))
    forced = run(qtbot, worker, lambda: worker.force(33, at_steps=2))
    assert forced.n_steps == 2 and forced.steps[-1].chosen_id == 33 and forced.steps[-1].forced
    continued = run(qtbot, worker, worker.step)
    assert continued.steps[-1].token_ids.tolist() == [33]


def test_a_broken_model_reports_one_sentence_and_keeps_the_previous_model(qtbot, worker, core):
    loaded(qtbot, worker, "models/good")
    run(qtbot, worker, lambda: worker.prefill([1, 5]))
    core.broken.add("models/bad")
    with qtbot.waitSignal(worker.failed, timeout=10000) as blocker:
        worker.load("models/bad")
    assert blocker.args[0] == "models/bad: the weights are truncated."
    qtbot.waitUntil(lambda: not worker.busy)
    trace = run(qtbot, worker, worker.step)
    assert trace.n_steps == 2 and trace.model.name == "good"


def test_stepping_without_a_model_is_an_error_not_a_crash(qtbot, worker):
    with qtbot.waitSignal(worker.failed, timeout=10000) as blocker:
        worker.step()
    assert "No model is loaded" in blocker.args[0]


def test_out_of_memory_on_the_gpu_falls_back_to_the_cpu_with_a_notice(qtbot, worker, core):
    core.oom_devices.add("cuda")
    with qtbot.waitSignal(worker.notice, timeout=10000) as notice:
        worker.load("models/a", device="cuda")
    qtbot.waitUntil(lambda: not worker.busy)
    assert "Out of memory on cuda" in notice.args[0]
    assert core.loads == [("models/a", "cuda"), ("models/a", "cpu")]
    assert core.decoders[-1].loaded.info.device == "cpu"


def test_sampling_reaches_the_decoder(qtbot, worker, core):
    loaded(qtbot, worker)
    worker.set_sampling(SamplingSettings(temperature=0.8, seed=4))
    trace = run(qtbot, worker, lambda: worker.prefill([1, 5]))
    assert core.decoders[-1].sampling.seed == 4
    assert trace.steps[-1].chosen_id == (5 * 7 + 3 + 4) % 50


def test_replay_rebuilds_forced_branches(qtbot, worker):
    loaded(qtbot, worker)
    run(qtbot, worker, lambda: worker.prefill([1, 5]))
    run(qtbot, worker, worker.step)
    run(qtbot, worker, lambda: worker.force(11, at_steps=2))
    original = run(qtbot, worker, lambda: worker.step(2))
    replayed = run(qtbot, worker, lambda: worker.replay([1, 5], forced=[(1, 11)], n_steps=4))
    assert replayed.token_ids.tolist() == original.token_ids.tolist()
    assert [s.chosen_id for s in replayed.steps] == [s.chosen_id for s in original.steps]


def test_shutdown_during_a_long_run_ends_the_thread(qtbot, core):
    worker = ModelWorker(core.api())
    loaded(qtbot, worker)
    run(qtbot, worker, lambda: worker.prefill([1, 5]))
    core.decoders[-1].gate = gate = threading.Event()
    worker.step(1000)
    qtbot.waitUntil(lambda: core.decoders[-1].calls[-1] == "step")
    gate.set()
    assert worker.shutdown(5.0)
    assert core.decoders[-1].trace.n_steps < 1000


# ----- the queue on its own ------------------------------------------------------------
def test_queue_coalescing_rules():
    queue = RequestQueue()
    queue.push(SetSampling(sampling=1))
    queue.push(Step())
    queue.push(Step(2))
    queue.push(Back())
    assert [type(r).__name__ for r in queue.pending()] == ["SetSampling", "Step"]
    assert queue.pending()[-1].count == 2
    queue.push(Back(3))
    assert [type(r).__name__ for r in queue.pending()] == ["SetSampling", "Back"]
    queue.push(Prefill(ids=(1,)))
    assert [type(r).__name__ for r in queue.pending()] == ["SetSampling", "Prefill"]
    queue.push(Load(path="x"))
    assert [type(r).__name__ for r in queue.pending()] == ["SetSampling", "Load"]


def test_queue_cancels_the_running_request_only_when_superseded():
    queue = RequestQueue()
    queue.push(Load(path="x"))
    running = queue.take()
    queue.push(Prefill(ids=(1,)))
    assert not queue.is_cancelled(running), "a prompt must wait for the model, not cancel its loading"
    queue.push(Load(path="y"))
    assert queue.is_cancelled(running)


# ----- idle means every answer has arrived --------------------------------------------------
def test_the_worker_is_idle_only_once_its_last_trace_has_arrived(qtbot, worker, core):
    loaded(qtbot, worker)
    run(qtbot, worker, lambda: worker.prefill([1, 5]))
    shown = []
    worker.trace_ready.connect(shown.append)
    idle_with = []
    worker.busy_changed.connect(lambda busy: idle_with.append(shown[-1].n_steps) if not busy else None)
    for count in range(1, 6):
        worker.step(count)
        qtbot.waitUntil(lambda: not worker.busy, timeout=10000)
        assert idle_with[-1] == core.decoders[-1].trace.n_steps, "idle before the last trace arrived"


def test_a_step_eaten_by_a_back_or_a_cancel_still_ends_busy(qtbot, worker, core):
    loaded(qtbot, worker)
    run(qtbot, worker, lambda: worker.prefill([1, 5]))
    for _ in range(20):                       # before the fix, one of these could stay busy forever
        worker.step()
        worker.back()
        qtbot.waitUntil(lambda: not worker.busy, timeout=10000)
        worker.step()
        worker.cancel()
        qtbot.waitUntil(lambda: not worker.busy, timeout=10000)
    assert worker._queue.pending() == []


def test_discarding_traces_drops_the_one_finishing_in_flight(qtbot, worker, core):
    loaded(qtbot, worker)
    run(qtbot, worker, lambda: worker.prefill([1, 5]))
    core.decoders[-1].gate = gate = threading.Event()
    shown = []
    worker.trace_ready.connect(shown.append)
    worker.step()
    qtbot.waitUntil(lambda: core.decoders[-1].calls[-1] == "step")
    worker.cancel(discard_traces=True)
    gate.set()
    qtbot.waitUntil(lambda: not worker.busy, timeout=10000)
    assert shown == [] and core.decoders[-1].trace.n_steps == 2
    after = run(qtbot, worker, worker.step)
    assert after.n_steps == 3, "later requests are handed on again"


def test_the_queue_plans_where_the_trace_is_headed():
    queue = RequestQueue()
    assert queue.plan() == (None, 0)
    queue.push(Prefill(ids=(1, 2, 3)))
    queue.push(Step(2))
    assert queue.plan() == (3, 2)
    prefill = queue.take()
    queue.handed_back(3)
    queue.finish(prefill)
    step = queue.take()
    queue.handed_back(4)                      # one of its two steps is done and shown
    queue.push(Step())
    queue.push(Back())                        # eats the queued Step; backs are not counted
    assert queue.plan() == (4, 1)
    queue.finish(step)


def test_a_load_starts_reading_the_weights_ahead_before_the_model_thread_takes_it(qtbot, core):
    from dataclasses import replace

    order = []
    api = core.api()
    api = replace(api, prefetch=lambda reference: order.append(("prefetch", reference)),
                  load_model=lambda path, **kw: (order.append(("load", path)), core.load_model(path, **kw))[1])
    worker = ModelWorker(api)
    try:
        loaded(qtbot, worker, "models/b")
        assert order == [("prefetch", "models/b"), ("load", "models/b")]
    finally:
        assert worker.shutdown(5.0)


def test_a_persons_request_holds_the_views_threads_and_a_panels_job_does_not(qtbot, core):
    """The model thread says, while it runs Run or Step, that the views' background threads must wait
    (thread.person_request: the all-heads grid's tiles); a panel's own model job (an atlas) says nothing, so the
    grid fills beside it. Read inside the core's own calls."""
    from explorer.app.thread import person_request

    seen = {}
    make_decoder = core.make_decoder

    def spying_decoder(*args, **kwargs):
        decoder = make_decoder(*args, **kwargs)
        for name in ("prefill", "step"):
            method = getattr(decoder, name)
            setattr(decoder, name, lambda *a, name=name, method=method: (
                seen.setdefault(name, person_request.running()), method(*a))[1])
        return decoder

    core.make_decoder = spying_decoder
    worker = ModelWorker(core.api())
    try:
        loaded(qtbot, worker)
        run(qtbot, worker, lambda: worker.prefill([1, 5, 6]))
        run(qtbot, worker, worker.step)
        run(qtbot, worker, lambda: worker.run_job(lambda _loaded, _cancelled: seen.setdefault(
            "job", person_request.running())))
    finally:
        assert worker.shutdown(5.0)
    assert seen == {"prefill": True, "step": True, "job": False}, seen
    assert not person_request.running()
