"""Quitting stops a tab's own thread: a job a panel runs beside the model thread (the head atlas's reading of
a long trace, the KV lab's what-if on a script's model: `model_call.thread_executor`) is asked to stop and
joined when the window closes, so the app exits 0. Such a thread was never told to stop: still in torch
when the interpreter finalised, it aborted the process ("terminate called without an active exception",
exit 134) after the figures of a long run had printed."""
from __future__ import annotations

import transformers  # noqa: F401  (the tiny model is written with it; missing, the run fails, never skips)

from tests.app.quit_child import assert_clean_exit, run_child
from tests.app.tiny_model import make_tiny_llama

STEPS = """
    from explorer.app.widgets.model_call import ModelCall, thread_executor

    open_and_run("To be, or not to be, that is the question: Whether 'tis nobler in the mind")
    for _ in range(8):              # a longer run: steps decoded and drawn
        window.worker.step()
    settle(lambda: window.session.trace.n_steps >= 9 and not window.worker.busy)
    atlas = window.docks["atlas"]
    atlas.show()
    atlas.raise_()
    started = threading.Event()

    def reading(_loaded, _progress, cancel):        # a tab's own torch work, block by block until cancelled
        import torch
        started.set()
        x = torch.randn(256, 256)
        while not cancel.is_set():
            x = torch.tanh(x @ x)
        print("the tab's job stopped", flush=True)

    call = ModelCall(atlas.widget())
    call.start(reading, thread_executor(None))
    settle(started.is_set)
    quit_app()                      # as the person quits: the tab's job is still running
    print("closed", flush=True)
"""


def test_the_app_exits_0_when_a_tab_is_busy_on_a_thread_of_its_own(tmp_path):
    tiny = make_tiny_llama(tmp_path / "tiny-llama")
    done = run_child(tmp_path, STEPS, tiny)
    assert_clean_exit(done)
    # stopped and joined by the quit itself, before the window is deleted (launch.tear_down)
    assert done.stdout.splitlines()[-2:] == ["the tab's job stopped", "closed"], done.stdout
