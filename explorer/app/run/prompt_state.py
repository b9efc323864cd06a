"""The prompt in the editor: its live tokens, and whether the trace shown is still its own.

Data flows one way: prompt text -> Tokens (live, before any run) -> the session. After an edit the trace
shown is out of date, and every panel says so. DecodingController takes these from here.
"""
from __future__ import annotations

import numpy as np

from explorer.app.state.freshness import out_of_date, started_from
from explorer.app.state.session_model import NO_MODEL
from explorer.core.errors import ExplorerError
from explorer.views import trace_views


class PromptState:
    """The prompt's tokens and freshness, for DecodingController (a mixin: it reads the controller's session,
    summary and prompt ids it ran)."""

    _replayed_start: np.ndarray | None = None   # the ids a saved session's replay starts from (session_restore)

    def set_prompt(self, text: str) -> None:
        """The editor's text (settled after a pause in typing, and at once before Run or Step)."""
        if text == self.prompt and (self.session.tokens is not None or self.summary is None):
            return
        self.prompt = text
        if self.session.not_run != NO_MODEL:    # typed with no model open: the panels keep saying why (drive 18)
            self.session.set_not_run(None)
        self._tokenize()
        self._update_out_of_date()

    def prompt_ids(self) -> np.ndarray | None:
        tokens = self.session.tokens
        return None if tokens is None else np.asarray(tokens.ids, dtype=np.int64)

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

    def _claim(self, trace) -> None:
        """The first trace started from the awaited run's prompt (or its cut tail) is that prompt's; so is a saved
        session's replay, which starts from the ids the session ran: after the context slid those are its last
        tokens and the tokens generated after them, not a tail of the prompt."""
        started = trace_views.started_ids(trace) if trace.steps else None
        if self._awaited is None or started is None:
            return
        replayed = self._replayed_start is not None and np.array_equal(started, self._replayed_start)
        if replayed or started_from(started, self._awaited):
            self._shown_prompt, self._awaited, self._replayed_start = self._awaited, None, None

    def _update_out_of_date(self) -> None:
        """Tell the session whether the trace shown is still the prompt's: after an edit it is not."""
        self.session.set_out_of_date(out_of_date(self.session.trace, self.prompt_ids(), self._shown_prompt))
