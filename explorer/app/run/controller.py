"""What a press means: turns toolbar and panel intents into worker requests, and traces into session state.

Data flows one way: prompt text -> Tokens (live, before any run) -> worker
prefill/step -> a new Trace -> `Session.set_trace`. The controller also owns
the small decisions around that flow: Step on a new prompt prefills it first,
a press made while a model is loading waits for the model, Play steps only
when the worker is free, and a prompt or a trace that would outgrow the
context or the trace memory budget is shortened only when the person agrees.
"""
from __future__ import annotations

from typing import Callable

import numpy as np
from PySide6.QtCore import QObject, QTimer, Signal
from PySide6.QtWidgets import QWidget

from explorer.app.run.prompt_fit import PromptFit
from explorer.app.run.run_progress import RunProgress
from explorer.app.run.trace_budget import DEFAULT_BUDGET
from explorer.app.run.trace_room import TraceRoom
from explorer.app.state.freshness import out_of_date, started_from
from explorer.app.state.session import CANCEL, ERROR, Session
from explorer.app.state.session_file import SessionState
from explorer.app.state.words import plural
from explorer.app.thread.core_api import LoadedSummary, SamplingSettings
from explorer.app.thread.decode_loop import replay_arguments
from explorer.app.thread.worker import ModelWorker
from explorer.core.errors import ExplorerError
from explorer.core.intervention import active
from explorer.views import trace_views

# A prompt longer than this is not run on its own after a model opens (a relaunch, a switch): its text
# stays in the editor and Run runs it. A few hundred tokens run in well under a second on a CPU.
AUTO_RUN_TOKENS = 512


class DecodingController(PromptFit, QObject):
    notice = Signal(str)                 # a line for the status bar
    model_ready = Signal(object)         # LoadedSummary of the model now in use
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
        self.room = TraceRoom(lambda: self.trace_budget)
        self._after_load: Callable[[], None] | None = None
        self._dialog_parent = dialog_parent
        self._play = QTimer(self)
        self._play.timeout.connect(self._on_play_tick)
        self.run_progress = RunProgress(worker, dialog_parent)
        self.run_progress.cancel_requested.connect(self.stop)
        worker.trace_ready.connect(self._on_trace_ready)
        worker.model_loaded.connect(self._on_model_loaded)
        worker.failed.connect(self._on_failed)
        worker.load_failed.connect(self._on_load_failed)
        worker.notice.connect(self.notice)
        worker.busy_changed.connect(session.set_busy)
        worker.lens_ready.connect(session.logit_lens_ready)
        worker.candidates_ready.connect(session.candidates_ready)
        session.force_requested.connect(self.force)
        session.step_requested.connect(self.step)
        session.logit_lens_requested.connect(lambda position: self._with_decoder(worker.logit_lens, position))
        session.candidates_requested.connect(lambda position: self._with_decoder(worker.candidates, position))
        session.model_job_requested.connect(worker.run_job)
        session.experiments_changed.connect(self._on_experiments_changed)

    # ----- model --------------------------------------------------------------------
    def load(self, reference: str, device: str = "cpu", dtype: str = "float32",
             then: Callable[[], None] | None = None) -> None:
        """Load a model (catalog name or path); `then` runs once it is ready (default: run the prompt)."""
        self.set_playing(False)
        self.loading = reference
        self._after_load = then
        self.loading_changed.emit(True)
        self.worker.load(reference, device, dtype)

    def cancel_load(self) -> None:
        if self.loading is not None:
            self.worker.cancel()
            self._end_loading()
            self.notice.emit("Loading cancelled; the previous model is still in use.")

    @property
    def reference(self) -> str | None:
        return self.summary.reference if self.summary is not None else None

    # ----- prompt ---------------------------------------------------------------------
    def set_prompt(self, text: str) -> None:
        """The editor's text (settled after a pause in typing, and at once before Run or Step)."""
        if text == self.prompt and (self.session.tokens is not None or self.summary is None):
            return
        self.prompt = text
        self.session.set_not_run(None)
        self._tokenize()
        self._update_out_of_date()

    def prompt_ids(self) -> np.ndarray | None:
        tokens = self.session.tokens
        return None if tokens is None else np.asarray(tokens.ids, dtype=np.int64)

    # ----- decoding -------------------------------------------------------------------
    def run(self) -> bool:
        """Prefill the prompt (from scratch); False when nothing was asked of the model."""
        if self._deferred(self.run):
            return self.loading is not None
        ids = self._checked_prompt_ids()
        if ids is None:
            return False
        self._run_prompt = self._awaited = self.prompt_ids()
        self.session.set_not_run(None)
        self.worker.prefill(ids)
        return True

    def step(self) -> bool:
        """One more token; a prompt that has not been run (or was edited) is prefilled instead.

        False when nothing was asked of the model (no model, an empty prompt, no room left).
        """
        if self._deferred(self.step):
            return self.loading is not None
        if self._needs_prefill():
            return self.run()
        reason = getattr(self.summary, "no_step_reason", None) or self.end_of_text(self.session.trace)
        if reason is not None:                     # an encoder, or the text ended: Step says why it does nothing
            self.notice.emit(reason)
            return False
        if not self._room_for_step():
            return False
        self._with_decoder(self.worker.step)
        return True

    def back(self) -> None:
        can_step = getattr(self.summary, "no_step_reason", None) is None
        if self.session.trace is not None and self.loading is None and can_step:
            self._with_decoder(self.worker.back)

    def _with_decoder(self, request, *args) -> None:
        """Ask `request` of the model thread, after replaying the trace shown if a cancelled run took it
        from the decoder (the trace stayed on screen; the decoder must hold it again before it goes on)."""
        lost, self._lost_trace = self._lost_trace, None
        if lost is not None:
            self.worker.replay(**lost)
        request(*args)

    def force(self, token_id: int) -> None:
        """Branch on `token_id` after the step being looked at, and continue from it."""
        trace = self.session.trace
        if trace is None or not trace.steps or self.loading is not None:
            return
        selected = self.session.selection.step
        at_steps = trace.n_steps if selected is None else selected + 1
        self._with_decoder(self.worker.force, token_id, at_steps)
        n_tokens = sum(s.n_new for s in trace.steps[:at_steps])
        problem = self.room.step_problem(trace, n_tokens, self.room.measure(trace).held)
        if problem is None:
            self.worker.step()
        else:
            self.notice.emit(f"{problem} Press Step to continue from a shorter context.")

    def reset(self) -> None:
        self.set_playing(False)
        self.worker.cancel(discard_traces=True)
        self._lost_trace = None
        self.session.set_trace(None)
        self._update_out_of_date()

    def stop(self) -> None:
        """Pause and cancel whatever the model is doing (loading included); the panels drop their jobs, which
        the model thread dropped from its queue."""
        self.set_playing(False)
        if self.loading is not None:
            self.cancel_load()
        else:
            self.worker.cancel()
        self.session.drop_work(CANCEL)

    def set_trace_budget(self, n_bytes: int) -> None:
        if int(n_bytes) != self.trace_budget:
            self.trace_budget = int(n_bytes)
            self.budget_changed.emit(self.trace_budget)

    def set_record_dtype(self, dtype: str, redo: bool = True) -> None:
        """Record the trace in float32 or float16 (half the memory); the current run is redone (unless a run
        that replaces it follows: `redo` False)."""
        if dtype != self.record_dtype:
            self.record_dtype = dtype
            self.worker.set_recording(dtype, redo)
            self.record_dtype_changed.emit(dtype)

    def set_sampling(self, sampling: SamplingSettings) -> None:
        if sampling != self.sampling:
            self.sampling = sampling
            self.worker.set_sampling(sampling)

    def set_playing(self, playing: bool, tokens_per_second: float | None = None) -> None:
        if tokens_per_second:
            self._play.setInterval(max(20, int(1000 / tokens_per_second)))
        if playing and not self._play.isActive():
            self._play.start()
            self.playing_changed.emit(True)
            self._on_play_tick()
        elif not playing and self._play.isActive():
            self._play.stop()
            self.playing_changed.emit(False)

    @property
    def playing(self) -> bool:
        return self._play.isActive()

    def restore(self, state: SessionState) -> None:
        """Rebuild a saved session exactly: its sampling, experiments, record dtype, prompt, forced tokens and steps."""
        self.set_sampling(state.sampling)
        self._redo_runs = False                             # the session's replay follows: nothing redone before
        try:
            self.session.set_experiments(state.experiments)
        finally:
            self._redo_runs = True

        def replay() -> None:
            self.set_record_dtype(state.record_dtype, redo=False)   # the saved precision (float16 is another trace)
            self.set_prompt(state.prompt)
            self._run_prompt = None
            if state.steps and state.prompt_ids:
                self._run_prompt = self._awaited = self.prompt_ids()    # the saved trace is this prompt's, even if cut
                self.notice.emit(f"Opening the session: running its {plural(len(state.prompt_ids), 'prompt token')}"
                                 + (f" and {plural(state.steps - 1, 'step')}…" if state.steps > 1 else "…"))
                self.worker.replay(state.prompt_ids, state.forced, state.steps)
            elif self.prompt:                   # saved before it ran: run it, as a newly opened model does
                self.run()

        if state.model and state.model != self.reference:
            self.load(state.model, state.device, state.dtype, then=replay)
        else:
            replay()

    def _on_experiments_changed(self, experiments) -> None:
        """The model redoes the run under the experiments that are on (a branch) and decodes on under them."""
        intervention = active(experiments)
        self.worker.set_intervention(None if intervention.is_empty else intervention, getattr(self, "_redo_runs", True))

    # ----- worker answers -------------------------------------------------------------
    def _on_trace_ready(self, trace) -> None:
        if self.summary is not None and trace.model.name != self.summary.info.name:
            return                          # a late answer about a model no longer shown
        if not trace.steps:                 # a prefill stopped half way (Cancel): the model holds nothing now
            self._cancelled_run()
            return
        self._lost_trace = None
        self._claim(trace)
        self.session.set_trace(trace)
        self._update_out_of_date()
        if self.playing and self._at_the_end(trace):
            self.set_playing(False)
        elif not self.playing and self.end_of_text(trace):
            self.notice.emit(self.end_of_text(trace))

    def _cancelled_run(self) -> None:
        """A run cancelled before its end. A re-run of the prompt shown leaves its trace up, valid, and the
        decoder is given it back before the next step; another prompt's leaves nothing shown, and says so."""
        shown, asked, self._awaited = self.session.trace, self._awaited, None
        shown_prompt = self._shown_prompt
        if shown is not None and shown.steps and asked is not None and (
                np.array_equal(asked, shown_prompt) if shown_prompt is not None
                else started_from(trace_views.started_ids(shown), asked)):
            self._lost_trace, self._run_prompt = replay_arguments(shown), shown_prompt
            self.notice.emit("The run was cancelled; the trace of the same prompt from before stays.")
        else:
            self.notice.emit("The run of the prompt was cancelled; nothing is shown. Press Run to start it again.")
            self.session.set_trace(None)
        self._update_out_of_date()

    def _on_model_loaded(self, summary: LoadedSummary) -> None:
        self.summary = summary
        if summary.tokenizer is not None:
            tokenizer = summary.tokenizer
            self.session.set_token_display(tokenizer.display)
            self.session.set_text_decoder(lambda ids: tokenizer.decode([i for i in ids if not tokenizer.is_special(i)]))
        self._lost_trace = None
        self.session.set_trace(None)
        self.session.set_model(summary.info)
        self._tokenize()
        self._update_out_of_date()
        action = self._after_load
        self._end_loading()
        self.model_ready.emit(summary)
        if action is not None:
            action()
        elif self.prompt:
            self._run_if_short()

    def _run_if_short(self) -> None:
        """Run the prompt once a model opens, unless it is long: then its text waits for Run, and the
        panels say why nothing is shown (a relaunch must not start minutes of work unasked)."""
        ids = self.prompt_ids()
        if ids is not None and len(ids) > AUTO_RUN_TOKENS:
            reason = (f"The prompt has {plural(len(ids), 'token')}, too many to run on its own when a model "
                      "opens: press Run (Ctrl+Enter) to run it.")
            self.session.set_not_run(reason)
            self.notice.emit(reason)
            return
        self.run()

    def _on_load_failed(self, reference: str) -> None:
        if reference == self.loading:
            self._end_loading()
            self.load_failed.emit(reference)

    def _on_failed(self, message: str) -> None:
        self.set_playing(False)
        self.session.drop_work(ERROR)
        self.session.report_error(message)

    def _on_play_tick(self) -> None:
        if not self.worker.busy and not self.step():
            self.set_playing(False)         # Play must not repeat a dialog at every tick

    # ----- helpers --------------------------------------------------------------------
    def _claim(self, trace) -> None:
        """The first trace started from the awaited run's prompt (or its cut tail) is that prompt's."""
        started = trace_views.started_ids(trace) if trace.steps else None
        if self._awaited is not None and started is not None and started_from(started, self._awaited):
            self._shown_prompt, self._awaited = self._awaited, None

    def _update_out_of_date(self) -> None:
        """Tell the session whether the trace shown is still the prompt's: after an edit it is not."""
        self.session.set_out_of_date(out_of_date(self.session.trace, self.prompt_ids(), self._shown_prompt))

    def _tokenize(self) -> None:
        """The prompt's tokens; a text that cannot be tokenized for this model (far past its context) leaves
        none, and Run says why."""
        self._tokenize_error = None
        if self.summary is not None and self.summary.tokenizer is not None:
            try:
                tokens = self.summary.tokenizer.encode(self.prompt)
            except ExplorerError as error:
                tokens, self._tokenize_error = None, f"The prompt was not tokenized: {error}"
                self.notice.emit(self._tokenize_error)
            self.session.set_tokens(tokens)

    def _deferred(self, action: Callable[[], None]) -> bool:
        """While a model loads, remember the press and do it once the model is ready."""
        if self.loading is None:
            if self.summary is None:
                self.session.report_error("No model is open yet; choose one in the Model box or File ▸ Open.")
                return True
            return False
        self._after_load = action
        return True

    def _end_loading(self) -> None:
        self.loading = None
        self._after_load = None
        self.loading_changed.emit(False)

    def _needs_prefill(self) -> bool:
        trace, ids = self.session.trace, self.prompt_ids()
        if trace is None or not trace.steps:
            return True
        started = self._run_prompt if self._run_prompt is not None else trace_views.started_ids(trace)
        return ids is not None and not np.array_equal(started, ids)

    def end_of_text(self, trace) -> str | None:
        """Why no step follows: the last step chose the model's end-of-sequence token; None when one may."""
        tokenizer = self.summary.tokenizer if self.summary is not None else None
        eos = getattr(tokenizer, "eos_id", None)
        if trace is None or not trace.steps or eos is None or trace.steps[-1].chosen_id != eos:
            return None
        return (f"The model chose the end-of-sequence token {self.session.display_token(eos)}: the text ends here. "
                "Back, or click another candidate to branch.")

    def _at_the_end(self, trace) -> bool:
        last = trace.steps[-1] if trace.steps else None
        ended = self.end_of_text(trace)
        if ended is not None:
            self.notice.emit(ended)
            return True
        problem = self.room.step_problem(trace) if last is not None else None
        if problem is not None:
            self.notice.emit(f"{problem} Paused.")
        return problem is not None

