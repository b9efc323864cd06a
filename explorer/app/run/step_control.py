"""Run, Step, Back, a branch on a token, Stop, Reset and Play: what each press asks of the model thread.

Step on a new or edited prompt prefills it first; Play steps only when the model thread is free, and
pauses at the end of the text or of the room the trace has. DecodingController takes these from here.
"""
from __future__ import annotations

import numpy as np

from explorer.app.state.session import CANCEL
from explorer.views import trace_views
from explorer.views.words import plural


class StepControl:
    """The decoding presses, for DecodingController (a mixin: it reads the controller's session, worker,
    room, summary, prompt and play timer)."""

    def run(self, *, announce: bool = True) -> bool:
        """Prefill the prompt (from scratch); False when nothing was asked of the model. A press's run (`announce`)
        says so in the status bar until the model is next idle, which ends what it said of the run before: "Run
        cancelled: the previous run is kept." stayed 5.6 s beside the new run's trace (drive33). A run that
        follows a model's opening is not announced: the opening's notice (experiments cleared) stays."""
        if self._deferred(lambda: self.run(announce=False)):
            return self.loading is not None
        ids = self._checked_prompt_ids()
        if ids is None:
            return False
        self._run_prompt = self._awaited = self.prompt_ids()
        self.session.set_not_run(None)
        self.worker.prefill(ids)
        if announce:
            self.notice.emit(f"Running {plural(len(ids), 'prompt token')}…")
        return True

    def step(self, *, announce: bool = True) -> bool:
        """One more token; a prompt that has not been run (or was edited) is prefilled instead (announced as
        Run's is).

        False when nothing was asked of the model (no model, an empty prompt, no room left).
        """
        if self._deferred(lambda: self.step(announce=False)):
            return self.loading is not None
        if self._needs_prefill():
            return self.run(announce=announce)
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
        from the decoder (the trace stayed on screen; the decoder must hold it again before it goes on).
        A give-back already queued serves: the request follows it."""
        if self._lost_trace is not None and not self._giving_back:
            self._give_back()
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
        if self.loading is not None:            # the load is cancelled with the rest: it ends here, too
            self.cancel_load()
        self.worker.cancel(discard_traces=True)
        self._lost_trace, self._giving_back = None, False
        self.session.set_trace(None)
        self._update_out_of_date()

    def stop(self) -> None:
        """Pause and cancel whatever the model is doing (loading included); the panels drop their jobs, which
        the model thread dropped from its queue. A run cancelled leaves the trace shown before on screen, and
        the decoder is given it back at once: idle, the model thread holds the trace the window shows."""
        self.set_playing(False)
        if self.loading is not None:
            self.cancel_load()
        elif self._awaited is not None and self.worker.busy:
            # A run in flight: whether the model thread has begun it or not, no trace asked so far is handed
            # on (one finishing now would replace the screen after Stop), and the trace shown stays.
            self.worker.cancel(discard_traces=True)
            self._give_back_dropped()
            self._keep_shown_trace()
        else:
            self.worker.cancel()
            self._give_back_dropped()
            if self._lost_trace is not None:    # the replay giving the decoder the trace shown was dropped too
                self._give_back()
        self.session.drop_work(CANCEL)

    # ----- Play -------------------------------------------------------------------------
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

    def _on_play_tick(self) -> None:
        if not self.worker.busy and not self.step():
            self.set_playing(False)         # Play must not repeat a dialog at every tick

    # ----- where the text stands ------------------------------------------------------------
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
