"""A panel deleted while its job runs (the app closing at 8,000 tokens: the grid filling, a model job running)
gets no answer, and its thread says nothing: the signal it would emit has gone with it."""
from __future__ import annotations

import threading

import shiboken6

from explorer.app.widgets.model_call import ModelCall


def test_a_model_job_that_ends_after_its_caller_was_deleted_says_nothing(qapp):
    call = ModelCall()
    ran, errors = threading.Event(), []
    release = threading.Event()

    def executor(work):
        def body():
            release.wait(10)
            try:
                work(None, lambda: False)
            except BaseException as error:       # what would print a traceback in the model thread
                errors.append(error)
            ran.set()
        threading.Thread(target=body).start()

    assert call.start(lambda loaded, progress, cancel: 42, executor)
    shiboken6.delete(call)                       # the window torn down while the job runs
    release.set()
    assert ran.wait(10)
    assert errors == []
