"""The model thread's answers: a trace arrived, a run was cancelled half way, a job failed.

A late trace of a model no longer shown is dropped; a cancelled re-run of the prompt shown leaves its trace
up, and the decoder is given it back before the next step. DecodingController takes these from here.
"""
from __future__ import annotations

import numpy as np

from explorer.app.state.freshness import started_from
from explorer.app.state.session import ERROR
from explorer.app.thread.decode_loop import replay_arguments
from explorer.views import trace_views


class TraceArrival:
    """The worker's answers, for DecodingController (a mixin: it reads the controller's session, summary and
    the prompt ids asked and shown)."""

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

    def _on_failed(self, message: str) -> None:
        self.set_playing(False)
        self.session.drop_work(ERROR)
        self.session.report_error(message)
