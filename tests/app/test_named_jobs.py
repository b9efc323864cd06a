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
