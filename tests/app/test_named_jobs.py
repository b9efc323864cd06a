"""Every named model job a panel can hand to its ModelCall has its handler in core_api, and a value that is
not one is refused rather than run."""
from __future__ import annotations

import inspect

import pytest

from explorer.app.thread import core_api, requests


def _named_jobs():
    return [cls for _, cls in inspect.getmembers(requests, inspect.isclass)
            if cls.__module__ == requests.__name__ and cls.__name__.endswith("Job") and not cls.__name__.startswith("_")
            and "__call__" in {name for klass in cls.__mro__[:-1] for name in vars(klass)}]


def test_every_named_job_has_a_handler_and_no_handler_lacks_a_job():
    names = {cls.__name__ for cls in _named_jobs()}
    assert {"CompareNextTokenJob", "PatchMapJob", "WhatIfJob", "HeadWeightsJob"} <= names
    assert names == set(core_api.NAMED_JOBS)


def test_a_named_job_is_handed_to_its_handler_with_the_model(monkeypatch):
    seen = []
    monkeypatch.setitem(core_api.NAMED_JOBS, "PatchMapJob", lambda job, loaded, progress, cancel: seen.append(
        (job, loaded)) or "map")
    job = requests.PatchMapJob("clean", "corrupt", " a", " b", "head")
    assert job("the model", lambda *a: None, lambda: False) == "map"
    assert seen == [(job, "the model")]


def test_a_value_that_is_no_named_job_is_refused():
    with pytest.raises(TypeError, match="ModelJob is not a named model job"):
        core_api.run_named_job(requests.ModelJob(job=None), None, None, None)


# ----- every named job through the real model thread, on the tiny Llama loaded as the app loads it ---------

import numpy as np  # noqa: E402
import transformers  # noqa: E402,F401  (the tiny model is written with it; missing, the run fails, never skips)

from explorer.app.thread.worker import ModelWorker  # noqa: E402
from explorer.app.widgets.model_call import ModelCall  # noqa: E402
from explorer.core.intervention import HeadAblation, Intervention  # noqa: E402
from tests.app.model_thread import wait  # noqa: E402
from tests.app.tiny_model import make_tiny_llama  # noqa: E402

PROMPT = "To be, or not to be"


@pytest.fixture(scope="module")
def loaded_worker(tmp_path_factory, qapp):
    """A real ModelWorker (the app's model thread and core) holding the tiny Llama and its prompt's ids."""
    folder = make_tiny_llama(tmp_path_factory.mktemp("models") / "tiny-llama")
    worker = ModelWorker()
    summaries = []
    worker.model_loaded.connect(summaries.append)
    worker.load(str(folder))
    wait(qapp, lambda: summaries and not worker.busy)
    ids = tuple(int(i) for i in summaries[0].tokenizer.encode(PROMPT).ids)
    worker.prefill(ids)
    wait(qapp, lambda: not worker.busy)
    yield worker, summaries[0], ids
    worker.shutdown()


def jobs_for(summary, ids) -> dict:
    """One job of every named kind, asked as its panel asks it, and what its answer must satisfy."""
    info = summary.info
    last, top = len(ids) - 1, info.n_layers - 1
    ablate = Intervention(ablations=(HeadAblation(top, 0),))
    return {
        "WhatIfJob": (requests.WhatIfJob("mqa", 2, ids), lambda r: len(r.comparisons) == 2),
        "HeadWeightsJob": (requests.HeadWeightsJob(top, 1), lambda r: r.layer == top and r.head == 1 and all(
            m.shape[0] == info.d_model for name, m in r.matrices.items() if name.startswith("W_1^{Q"))),
        "AttributionJob": (requests.AttributionJob(ids, last), lambda r: np.isclose(r.total(), r.logit, atol=1e-4)),
        "ResidualStreamJob": (requests.ResidualStreamJob(ids, last, 3),
                              lambda r: np.asarray(r.lens_ids).shape == (info.n_layers + 1, 3)
                              or np.asarray(r.lens_ids).shape == (info.n_layers, 3)),
        "HeadScoresJob": (requests.HeadScoresJob(), lambda r: r.induction.shape == (info.n_layers, info.n_heads)),
        "OutputWeightsJob": (requests.OutputWeightsJob(0, 2), lambda r: r[0].shape[-1] == info.d_model or
                             r[0].shape[0] == info.d_model),
        "BlockWalkJob": (requests.BlockWalkJob(ids, 0, last), lambda r: r is not None),
        "CompareNextTokenJob": (requests.CompareNextTokenJob(ids, ablate, 5),
                                lambda r: r.kl >= 0 and len(r.before_ids) == len(r.after_ids) == 5),
        "PatchMapJob": (requests.PatchMapJob("To be, or not to be", "To be, or not to to", " be", " to", "head"),
                        lambda r: r.values.shape == (info.n_layers, info.n_heads)),
    }


def test_every_named_job_runs_through_the_model_thread(qapp, loaded_worker):
    worker, summary, ids = loaded_worker
    asked = jobs_for(summary, ids)
    assert set(asked) == {cls.__name__ for cls in _named_jobs()}, "a named job without a run here"
    for name, (job, holds) in asked.items():
        call, answers = ModelCall(), []
        call.finished.connect(lambda result: answers.append(("ok", result)))
        call.failed.connect(lambda message: answers.append(("failed", message)))
        assert call.start(job, worker.run_job)
        wait(qapp, lambda: bool(answers))
        kind, value = answers[0]
        assert kind == "ok", f"{name}: {value}"
        assert holds(value), f"{name} answered {type(value).__name__} that does not hold"
