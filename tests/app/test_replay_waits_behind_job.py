"""A replay asked while a panel's job holds the model thread (Alt-click ablates a head while the head atlas scores,
issue 22 item 8) says that it waits, and for what, rather than nothing or a bar at 100 %; its bar reaches 100 %
only once its steps are decoded too; its dialog closes with its own trace, not with the jobs queued after it; and
both end with the answers the model gives unqueued."""
from __future__ import annotations

import threading

import numpy as np
import pytest
from PySide6.QtWidgets import QWidget

from explorer.app.run.run_progress import RunProgress
from explorer.app.thread.core_api import CoreApi
from explorer.app.thread.requests import HeadScoresJob
from explorer.app.thread.worker import ModelWorker
from explorer.app.widgets.model_call import ModelCall
from explorer.core.intervention import HeadAblation, Intervention
from tests.app.test_experiments_worker import _top_probs_after
from tests.app.test_worker import loaded, run
from tests.core.tiny_checkpoints import write_hf_folder

pytestmark = pytest.mark.usefixtures("store_home")

ABLATE = Intervention(ablations=(HeadAblation(1, 0),))


class HeldJob:
    """A panel's job that holds the model thread until `release` is set, then runs `job` (its answer)."""

    def __init__(self, job) -> None:
        self.job, self.what = job, getattr(job, "what", "")
        self.started, self.release = threading.Event(), threading.Event()

    def __call__(self, loaded, progress, cancel):
        self.started.set()
        self.release.wait(60)
        return self.job(loaded, progress, cancel)


def _start(job, worker) -> tuple[ModelCall, list]:
    call, answers = ModelCall(), []
    call.finished.connect(lambda result: answers.append(("ok", result)))
    call.failed.connect(lambda message: answers.append(("failed", message)))
    assert call.start(job, worker.run_job)
    return call, answers


@pytest.fixture
def worker(qtbot, tmp_path):
    write_hf_folder(tmp_path)
    w = ModelWorker(CoreApi.real())
    loaded(qtbot, w, str(tmp_path))
    yield w, str(tmp_path)
    assert w.shutdown(10.0)


def test_a_replay_behind_the_atlas_says_it_waits_then_closes_with_its_own_trace(qtbot, worker):
    worker, folder = worker
    run(qtbot, worker, lambda: worker.prefill([5, 9, 13, 40, 41]))
    run(qtbot, worker, lambda: worker.step(3))
    parent = QWidget()
    qtbot.addWidget(parent)
    progress = RunProgress(worker, parent)
    reports, traces = [], []
    worker.run_progress.connect(lambda fraction, text: reports.append((fraction, text)))
    worker.trace_ready.connect(traces.append)

    atlas = HeldJob(HeadScoresJob())
    atlas_call, atlas_answers = _start(atlas, worker)
    qtbot.waitUntil(atlas.started.is_set, timeout=10000)
    worker.set_intervention(ABLATE)                     # Alt-click: ablate a head, run the prompt again
    later = HeldJob(lambda loaded, progress, cancel: "compared")  # the comparison queued after the replay
    later_call, later_answers = _start(later, worker)
    qtbot.wait(50)
    try:
        assert progress.dialog is not None, "nothing says the replay waits"
        said = progress.dialog.toolTip()
        assert "Waiting for the head atlas" in said and "100" not in said, said
        assert progress.dialog.value() < progress.dialog.maximum() / 2
        assert not reports and not traces, "the replay ran while the atlas held the thread"
    finally:
        atlas.release.set()
    qtbot.waitUntil(lambda: bool(traces), timeout=20000)
    qtbot.waitUntil(lambda: progress.dialog is None, timeout=5000)
    assert later.started.wait(10) and worker.busy and not later_answers, "the later job ended already"
    later.release.set()
    qtbot.waitUntil(lambda: not worker.busy and bool(later_answers), timeout=20000)

    fractions = [fraction for fraction, _ in reports]
    assert fractions[-1] == pytest.approx(1.0)
    assert all(f < 1.0 for f in fractions[:-1]), f"100 % while the replay still ran: {reports}"
    assert fractions == sorted(fractions)
    assert any("decoded" in text for _, text in reports)
    assert atlas_answers and atlas_answers[0][0] == "ok"
    n_layers, n_heads = atlas_answers[0][1].induction.shape
    assert n_layers == 2 and n_heads > 0
    assert later_answers == [("ok", "compared")]
    branched = traces[-1]
    assert branched.n_steps == 4
    np.testing.assert_allclose(branched.steps[-1].top_probs[0],
                               _top_probs_after(folder, branched.token_ids, ABLATE), atol=1e-5)
    del atlas_call, later_call
