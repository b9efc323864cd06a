"""A real ModelWorker (the app's model thread and core) holding a tiny Llama, and the run of one prompt, for
tests of panels that ask the model thread, as the app's controller hands their jobs to it."""
from __future__ import annotations

import time

from explorer.app.thread.worker import ModelWorker
from tests.app.tiny_model import make_tiny_llama


def wait(app, condition, timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "the model thread did not answer"
        app.processEvents()
        time.sleep(0.005)


class TinyWorker:
    """The worker, its model's summary, and `run(text)`: the trace of a prefill of `text`."""

    def __init__(self, app, folder) -> None:
        self.app, self.worker, self.summaries, self.traces = app, ModelWorker(), [], []
        self.worker.model_loaded.connect(self.summaries.append)
        self.worker.trace_ready.connect(self.traces.append)
        self.worker.load(str(folder))
        wait(app, lambda: self.summaries and not self.worker.busy)
        self.summary = self.summaries[0]

    def run(self, text: str):
        seen = len(self.traces)
        self.worker.prefill(tuple(int(i) for i in self.summary.tokenizer.encode(text).ids))
        wait(self.app, lambda: len(self.traces) > seen and not self.worker.busy)
        return self.traces[-1]

    def idle(self) -> None:
        wait(self.app, lambda: not self.worker.busy)

    def shutdown(self) -> None:
        self.worker.shutdown()


def tiny_worker(app, tmp_path_factory, n_layers: int = 2):
    """A TinyWorker on a freshly written tiny Llama of `n_layers` layers; shut it down after use."""
    return TinyWorker(app, make_tiny_llama(tmp_path_factory.mktemp("models") / "tiny-llama", n_layers=n_layers))


def press_stop(worker: TinyWorker, session) -> None:
    """What Stop (Esc) does with no run in flight (run.step_control.StepControl.stop): the model thread cancels
    the job it runs and drops those queued, and the panels hear the cancel."""
    from explorer.app.state.session import CANCEL

    worker.worker.cancel()
    session.drop_work(CANCEL)
