"""What a press means: turns toolbar and panel requests into worker requests, and traces into session state.

Data flows one way: prompt text -> Tokens (live, before any run) -> worker prefill/step -> a new Trace ->
`Session.set_trace`. The controller holds the run's state and wires the worker and the session's requests
to it; each concern is a module of its own in explorer.app.run:

- model_loading: a load asked, cancelled, failed or done, and a press that waits for it;
- step_control: Run, Step, Back, a branch, Stop, Reset and Play;
- prompt_state: the prompt's tokens, and whether the trace shown is still its own;
- prompt_fit: a prompt or a step past the context or the trace budget, shortened only when the person agrees;
- trace_arrival: the worker's traces, cancels and failures;
- run_settings: the sampling, the record precision, the trace budget and the experiments on;
- session_restore: a saved session replayed.
"""
from __future__ import annotations

from typing import Callable

import numpy as np
from PySide6.QtCore import QObject, QTimer, Signal
from PySide6.QtWidgets import QWidget

from explorer.app.run.model_loading import AUTO_RUN_TOKENS, ModelLoading  # noqa: F401 (named from here)
from explorer.app.run.prompt_fit import PromptFit
from explorer.app.run.prompt_state import PromptState
from explorer.app.run.run_progress import RunProgress
from explorer.app.run.run_settings import RunSettings
from explorer.app.run.session_restore import SessionRestore
from explorer.app.run.step_control import StepControl
from explorer.app.run.trace_arrival import TraceArrival
from explorer.app.run.trace_budget import DEFAULT_BUDGET
from explorer.app.run.trace_room import TraceRoom
from explorer.app.state.session import Session
from explorer.app.thread.core_api import LoadedSummary, SamplingSettings
from explorer.app.thread.worker import ModelWorker


class DecodingController(ModelLoading, StepControl, PromptState, PromptFit, TraceArrival, RunSettings,
                         SessionRestore, QObject):
    notice = Signal(str)                 # a line for the status bar
    model_ready = Signal(object)         # LoadedSummary of the model now in use
    model_changed = Signal(object)       # LoadedSummary of the model now in use, or None: no model is open
    load_failed = Signal(str)            # the reference that could not be loaded
    loading_changed = Signal(bool)
    playing_changed = Signal(bool)
    budget_changed = Signal(object)      # the trace memory budget, int bytes (raised from a question, too; past 2³¹)
    record_dtype_changed = Signal(str)   # what the trace is recorded in (float16 chosen from a question, too)

    def __init__(self, session: Session, worker: ModelWorker, dialog_parent: QWidget | None = None) -> None:
        super().__init__(dialog_parent)
        self.session = session
        self.worker = worker
        self.summary: LoadedSummary | None = None
        self.prompt = ""
        self.sampling = SamplingSettings()
        self.loading: str | None = None             # the reference being loaded
        self.trace_budget = DEFAULT_BUDGET          # bytes the trace may take before we ask
        self.record_dtype = "float32"               # what the trace's arrays are recorded in
        self._run_prompt: np.ndarray | None = None  # the prompt ids the trace was started from, uncut
        self._awaited: np.ndarray | None = None     # the prompt ids of a run asked for, until its trace comes
        self._shown_prompt: np.ndarray | None = None  # the uncut prompt ids of the trace shown
        self._lost_trace: dict | None = None         # replay_arguments of the trace shown, which a cancelled
                                                     # run took from the decoder: replayed before the next step
        self._giving_back = False                    # a replay of _lost_trace is queued (the next step follows it)
        self._redo_runs = True                       # False while a session's replay is about to record the run
        self.room = TraceRoom(lambda: self.trace_budget)
        self._after_load: Callable[[], None] | None = None
        self._dialog_parent = dialog_parent
        self._play = QTimer(self)
        self._play.timeout.connect(self._on_play_tick)
        self.run_progress = RunProgress(worker, dialog_parent)
        self.run_progress.cancel_requested.connect(self.stop)
        self._connect_worker(worker)
        self._connect_requests(session, worker)

    def _connect_worker(self, worker: ModelWorker) -> None:
        """The model thread's answers: traces, a model, failures, notices, and the answers panels asked for."""
        worker.trace_ready.connect(self._on_trace_ready)
        worker.model_loaded.connect(self._on_model_loaded)
        worker.model_loaded_late.connect(self._on_model_loaded_late)
        worker.failed.connect(self._on_failed)
        worker.load_failed.connect(self._on_load_failed)
        worker.notice.connect(self.notice)
        worker.busy_changed.connect(self.session.set_busy)
        worker.lens_ready.connect(self.session.requests.logit_lens_ready)
        worker.candidates_ready.connect(self.session.requests.candidates_ready)
        worker.jobs_changed.connect(self.session.requests.jobs_changed)

    def _connect_requests(self, session: Session, worker: ModelWorker) -> None:
        """What the panels ask of the model (session.requests), and the experiments it runs under."""
        requests = session.requests
        requests.force_requested.connect(self.force)
        requests.step_requested.connect(self.step)
        requests.logit_lens_requested.connect(lambda position: self._with_decoder(worker.logit_lens, position))
        requests.candidates_requested.connect(lambda position: self._with_decoder(worker.candidates, position))
        requests.model_job_requested.connect(worker.run_job)
        session.experiments_changed.connect(self._on_experiments_changed)
