"""Opening a saved session: its model, sampling, experiments, record precision, prompt, forced tokens and
steps, rebuilt exactly by replaying them: the tokens it decoded come back even if its seed or temperature
was changed after stepping (a file from before those were saved samples its steps again). DecodingController
takes this from here; the file itself is explorer.app.state.session_file's.

A session may also be put back without running it (`restore(state, run=False)`, chosen after a crash when its
replay is long): the model, sampling, experiments and prompt come back, and the panels say that Run runs it.
"""
from __future__ import annotations

import numpy as np

from explorer.app.run.model_loading import AUTO_RUN_TOKENS
from explorer.app.state.session_file import SessionState
from explorer.views.words import plural


def replay_tokens(state: SessionState) -> int:
    """The tokens a replay of `state` runs through the model: its prompt's and one per decoded step."""
    return len(state.prompt_ids) + max(state.steps - 1, 0)


def is_long(state: SessionState) -> bool:
    """A replay too long to start unasked: past what a model opened runs on its own (AUTO_RUN_TOKENS)."""
    return replay_tokens(state) > AUTO_RUN_TOKENS


class SessionRestore:
    """A saved session's replay, for DecodingController (a mixin)."""

    def restore(self, state: SessionState, run: bool = True) -> None:
        """Rebuild a saved session exactly: its sampling, experiments, record dtype, prompt, forced tokens and
        steps; with `run` False, all but the run: the prompt waits in the editor for Run."""
        self.set_sampling(state.sampling)
        self._redo_runs = False                             # the session's replay follows: nothing redone before
        loads = bool(state.model and state.model != self.reference)
        try:        # the file's experiments are its model's: one loading now takes them (a switch clears others)
            self.session.set_experiments(state.experiments, for_next_model=loads)
        finally:
            self._redo_runs = True
        then = (lambda: self._replay(state)) if run else (lambda: self._put_back(state))
        if loads:
            self.load(state.model, state.device, state.dtype, then=then)
        else:
            then()

    def _replay(self, state: SessionState) -> None:
        """Run the saved prompt and its steps in the saved precision (float16 is another trace)."""
        self.set_record_dtype(state.record_dtype, redo=False)
        self.set_prompt(state.prompt)
        self._run_prompt = None
        if state.steps and state.prompt_ids:
            saved = np.asarray(state.prompt_ids, dtype=np.int64)
            # the saved trace is this prompt's, even if cut or slid (prompt_state._claim); unless the prompt was
            # edited after it ran: then it is the ids it ran, and the trace comes back out of date, as it was saved
            # (drive29: an edited 26,667-token prompt was taken for the trace's, every token called generated)
            self._run_prompt = self._awaited = saved if state.edited else self.prompt_ids()
            self._replayed_start = saved
            self.notice.emit(f"Opening the session: running its {plural(len(state.prompt_ids), 'prompt token')}"
                             + (f" and {plural(state.steps - 1, 'step')}…" if state.steps > 1 else "…"))
            self.worker.replay(state.prompt_ids, state.forced, state.steps, state.decoded)
        elif self.prompt:                   # saved before it ran: run it as a newly opened model does (if short)
            self._run_if_short()

    def _put_back(self, state: SessionState) -> None:
        """The session's prompt and precision back, nothing run: the panels say why, and that Run runs it."""
        self.set_record_dtype(state.record_dtype, redo=False)
        self.set_prompt(state.prompt)
        self._run_prompt = None
        if not self.prompt:
            return
        decoded = f", its {plural(state.steps - 1, 'decoded token')} not replayed" if state.steps > 1 else ""
        ids = self.prompt_ids()
        n_tokens = len(ids) if ids is not None else len(state.prompt_ids)
        reason = (f"The restored session was not run{decoded}: press Run (Ctrl+Enter) to run its "
                  f"{plural(n_tokens, 'prompt token')}.")
        self._not_run(reason)
