"""The model thread runs under the Experiments dock's intervention: the trace is redone under it (a branch),
decoding continues under it, a new model takes it when it fits and drops it with a notice when not."""
from __future__ import annotations

import numpy as np
import pytest

from explorer.app.thread.core_api import CoreApi
from explorer.app.thread.request_queue import RequestQueue
from explorer.app.thread.requests import Load, SetIntervention, SetSampling, Step
from explorer.app.thread.worker import ModelWorker
from explorer.core.intervention import HeadAblation, Intervention, Kernel, KernelChoice
from tests.app.test_worker import loaded, run
from tests.app.window_helpers import idle, opened, step
from tests.core.tiny_checkpoints import write_hf_folder

pytestmark = pytest.mark.usefixtures("store_home")  # the store in the test's folder

RELU = Intervention(kernels=(KernelChoice(Kernel("relu")),), ablations=(HeadAblation(1, 2),))


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    path = tmp_path_factory.mktemp("tiny-llama")
    write_hf_folder(path)
    return str(path)


@pytest.fixture
def worker(qtbot):
    w = ModelWorker(CoreApi.real())
    yield w
    assert w.shutdown(10.0)


def _top_probs_after(folder, ids, intervention) -> np.ndarray:
    """The ten largest p = softmax(z) after `ids`, from one uncached pass of the core under `intervention`."""
    from explorer.core.experiments import next_logits
    from explorer.core.runtime import load_model

    logits = next_logits(load_model(folder), ids, intervention).numpy()
    p = np.exp(logits - logits.max())
    return np.sort(p / p.sum())[::-1][:10]


def test_the_trace_is_redone_under_the_intervention_and_steps_continue_under_it(qtbot, worker, folder):
    loaded(qtbot, worker, folder)
    plain = run(qtbot, worker, lambda: worker.prefill([5, 9, 13, 40, 41]))
    run(qtbot, worker, lambda: worker.step(2))
    branched = run(qtbot, worker, lambda: worker.set_intervention(RELU))
    assert branched.n_steps == 3 and branched.steps[0].layers[1].attn.kernel == Kernel("relu")
    np.testing.assert_allclose(branched.steps[-1].top_probs[0], _top_probs_after(folder, branched.token_ids, RELU),
                               atol=1e-5)
    stepped = run(qtbot, worker, worker.step)
    assert stepped.n_steps == 4 and stepped.steps[-1].layers[0].attn.kernel == Kernel("relu")
    np.testing.assert_allclose(stepped.steps[-1].top_probs[0], _top_probs_after(folder, stepped.token_ids, RELU),
                               atol=1e-5)
    back = run(qtbot, worker, lambda: worker.set_intervention(None))
    assert back.steps[0].layers[0].attn.kernel == Kernel()
    assert not np.allclose(back.steps[0].top_probs, branched.steps[0].top_probs)
    np.testing.assert_allclose(back.steps[0].top_probs, plain.steps[0].top_probs, atol=1e-6)


def test_a_model_the_intervention_does_not_fit_runs_without_it_and_says_so(qtbot, worker, folder):
    loaded(qtbot, worker, folder)
    notices = []
    worker.notice.connect(notices.append)
    run(qtbot, worker, lambda: worker.set_intervention(Intervention(ablations=(HeadAblation(7, 0),))))
    loaded(qtbot, worker, folder)
    assert any("do not fit" in n and "layer 7" in n for n in notices)
    trace = run(qtbot, worker, lambda: worker.prefill([5, 9, 13]))
    assert trace.steps[0].layers[0].attn.kernel == Kernel()


def test_the_queue_keeps_the_intervention_across_a_load_and_the_latest_one_wins():
    queue = RequestQueue()
    queue.push(SetIntervention(intervention=RELU))
    queue.push(SetIntervention(intervention=None))
    queue.push(SetSampling(sampling=None))
    queue.push(Step())
    queue.push(Load(path="x"))
    kinds = [type(r) for r in queue.pending()]
    assert kinds == [SetIntervention, SetSampling, Load]
    assert queue.pending()[0].intervention is None


def test_a_saved_session_reopens_under_its_experiments(qtbot, window, tiny):
    """The window: an Alt-click ablation redoes the trace; the session file keeps it; reopening runs under it."""
    from explorer.app.state.session_file import SessionState

    opened(qtbot, window, tiny)
    plain = step(qtbot, window, 2)
    window.session.add_experiment(RELU)
    branched = idle(qtbot, window, lambda: window.session.trace is not None
                    and window.session.trace.steps[0].layers[0].attn.kernel == Kernel("relu"))
    assert branched.n_steps == plain.n_steps
    state = window.session_state()
    assert SessionState.from_json(state.to_json()).experiments == window.session.experiments
    window.session.set_experiments(())
    idle(qtbot, window, lambda: window.session.trace.steps[0].layers[0].attn.kernel == Kernel())
    window.restore_session(SessionState.from_json(state.to_json()))
    again = idle(qtbot, window, lambda: window.session.trace.steps[0].layers[0].attn.kernel == Kernel("relu"))
    np.testing.assert_array_equal(again.token_ids, branched.token_ids)
    np.testing.assert_allclose(again.steps[-1].top_probs, branched.steps[-1].top_probs, atol=1e-6)
