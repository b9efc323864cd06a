"""Opening a saved session: its model, sampling, experiments, record precision, prompt, forced tokens and
steps, rebuilt exactly by replaying them. DecodingController takes this from here; the file itself is
explorer.app.state.session_file's.
"""
from __future__ import annotations

from explorer.app.state.session_file import SessionState
from explorer.app.state.words import plural


class SessionRestore:
    """A saved session's replay, for DecodingController (a mixin)."""

    def restore(self, state: SessionState) -> None:
        """Rebuild a saved session exactly: its sampling, experiments, record dtype, prompt, forced tokens and steps."""
        self.set_sampling(state.sampling)
        self._redo_runs = False                             # the session's replay follows: nothing redone before
        try:
            self.session.set_experiments(state.experiments)
        finally:
            self._redo_runs = True
        if state.model and state.model != self.reference:
            self.load(state.model, state.device, state.dtype, then=lambda: self._replay(state))
        else:
            self._replay(state)

    def _replay(self, state: SessionState) -> None:
        """Run the saved prompt and its steps in the saved precision (float16 is another trace)."""
        self.set_record_dtype(state.record_dtype, redo=False)
        self.set_prompt(state.prompt)
        self._run_prompt = None
        if state.steps and state.prompt_ids:
            self._run_prompt = self._awaited = self.prompt_ids()    # the saved trace is this prompt's, even if cut
            self.notice.emit(f"Opening the session: running its {plural(len(state.prompt_ids), 'prompt token')}"
                             + (f" and {plural(state.steps - 1, 'step')}…" if state.steps > 1 else "…"))
            self.worker.replay(state.prompt_ids, state.forced, state.steps)
        elif self.prompt:                   # saved before it ran: run it, as a newly opened model does
            self.run()
