"""The model thread's answers: a trace arrived, a run was cancelled half way, a job failed.

A late trace of a model no longer shown is dropped; a cancelled run leaves the trace shown before up (out of
date when its prompt was another), and the decoder is given it back at once: by the replay asked here when
Stop discarded the run's traces, else by the model thread itself (decode_loop, before any read queued).
DecodingController takes these from here.
"""
from __future__ import annotations

import numpy as np

from explorer.app.state.session import ERROR
from explorer.app.thread.replay import replay_arguments


class TraceArrival:
    """The worker's answers, for DecodingController (a mixin: it reads the controller's session, summary and
    the prompt ids asked and shown)."""

    def _on_trace_ready(self, trace) -> None:
        if self.summary is not None and trace.model.name != self.summary.info.name:
            return                          # a late answer about a model no longer shown
        if not trace.steps:                 # a prefill stopped half way (Cancel): the model thread gives the
            if self._lost_trace is None:    # trace shown back itself (else the give-back itself was stopped:
                self._keep_shown_trace(replay=False)   # Stop asks it again; a load's cancel leaves it to the load)
            return
        if self._given_back(trace):
            return
        self._lost_trace, self._giving_back = None, False
        self._claim(trace)
        self.session.set_trace(trace)
        self._update_out_of_date()
        if self.playing and self._at_the_end(trace):
            self.set_playing(False)
        elif not self.playing and self.end_of_text(trace):
            self.notice.emit(self.end_of_text(trace))

    def _keep_shown_trace(self, replay: bool = True) -> None:
        """A cancelled run leaves the trace shown before on screen, whichever prompt the run was of and
        however far it got: the decoder is given that trace back (replayed now: by the window when `replay`, else
        by the model thread, which queued it), and the panels say it is out of date when the prompt differs.
        With nothing shown before, nothing is shown, and it says so."""
        shown, self._awaited = self.session.trace, None
        if shown is not None and shown.steps:
            self._lost_trace, self._run_prompt = replay_arguments(shown), self._shown_prompt
            if replay:
                self._give_back()
            else:
                self._giving_back = True    # its trace, when it comes, is recognised (_given_back) and kept
            self.notice.emit("Run cancelled: the previous run is kept.")
        else:
            self.notice.emit("The run of the prompt was cancelled; nothing is shown. Press Run to start it again.")
            self.session.set_trace(None)
        self._update_out_of_date()

    def _give_back(self) -> None:
        """Have the model thread replay the trace shown now, so that once idle its decoder holds what the
        window shows (a panel's job lent the decoder reads it too). `_lost_trace` stays until a trace arrives:
        a Stop that drops this replay from the queue asks for it again; until then a request asked of the
        decoder follows this replay rather than asking another (which would cancel it and start over)."""
        self._giving_back = True
        self.worker.replay(**self._lost_trace)

    def _give_back_dropped(self) -> None:
        """The queue was emptied (Stop, a cancelled or failed load): a give-back queued is gone with it."""
        self._giving_back = False

    def _given_back(self, trace) -> bool:
        """True for the replay of the trace shown: the decoder holds it again, and the same trace stays up
        (its numbers are those shown; a new object would redraw and drop every panel's work for nothing)."""
        shown = self.session.trace
        if self._lost_trace is None or shown is None or replay_arguments(trace) != self._lost_trace:
            return False
        if not np.array_equal(trace.token_ids, shown.token_ids):
            return False                        # sampled otherwise this time: the decoder's trace is shown
        self._lost_trace, self._giving_back = None, False
        return True

    def _on_failed(self, message: str) -> None:
        self.set_playing(False)
        self.session.drop_work(ERROR)
        self.session.report_error(message)
