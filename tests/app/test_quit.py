"""Quitting stops and joins every thread: the app exits 0 after a run with a busy tab, even while the model
thread is inside a long torch call that cannot be interrupted (a daemon thread left in torch when the
interpreter finalises aborted the process: "terminate called without an active exception", exit 134)."""
from __future__ import annotations

import transformers  # noqa: F401  (the tiny model is written with it; missing, the run fails, never skips)

from tests.app.quit_child import assert_clean_exit, run_child
from tests.app.tiny_model import make_tiny_llama

STEPS = """
    open_and_run("To be, or not to be")
    for name in ("experiments", "atlas", "attribution", "attention"):       # tabs with work of their own
        window.docks[name].show()
        window.docks[name].raise_()
    started, closed = threading.Event(), threading.Event()

    def long_torch_call(loaded, cancelled):         # deaf to cancel, like one big op: still running at the close
        import torch
        started.set()
        x = torch.randn(256, 256)
        while not closed.is_set():
            x = torch.tanh(x @ x)
        end = time.monotonic() + 1.0
        while time.monotonic() < end:
            x = torch.tanh(x @ x)
        print("the long job ended", flush=True)

    window.session.requests.model_job_requested.emit(long_torch_call)
    settle(started.is_set)
    window.close()                  # as the person quits: the job is still running
    app.processEvents()
    print("closed", flush=True)
    closed.set()
    tear_down(window)               # what launch() does once its event loop has returned
"""


def test_the_app_exits_0_with_a_long_job_running_and_every_thread_joined(tmp_path):
    tiny = make_tiny_llama(tmp_path / "tiny-llama")
    done = run_child(tmp_path, STEPS, tiny, timeout_s=300)
    assert_clean_exit(done)
    lines = done.stdout.splitlines()
    assert lines[-2:] == ["closed", "the long job ended"], done.stdout     # joined before the process ended
