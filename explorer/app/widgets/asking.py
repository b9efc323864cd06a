"""One question at a time to the model thread, for the panels that need the model itself (model_call.py).

A panel asks with a key (what the answer depends on: the tokens, the position, the token) and a job;
the same key again asks nothing, a new key asked while a job runs is asked once that job answers,
and only the answer to the latest key is handed on. A key the person stopped (`stop`: Stop, a Cancel) is not
asked again until they ask (`resume`) or another key is asked: a Stop never restarts what it stopped.
"""
from __future__ import annotations

from typing import Callable

from explorer.app.widgets.model_call import Job, ModelCall


class Asker:
    def __init__(self, panel, on_answer: Callable[[object, object], None], on_failure: Callable[[str], None]):
        self.panel = panel
        self.call = ModelCall(panel)
        self.call.finished.connect(self._finished)
        self.call.failed.connect(self._failed)
        self.on_answer, self.on_failure = on_answer, on_failure
        self.asked = None                   # the key of the job running or answered last
        self.waiting: tuple[object, Job] | None = None
        self.stopped = None                 # the key the person stopped: not asked again until resume()
        panel.askers.append(self)           # the panel drops its questions on a model switch, a cancel (base.Panel)

    def can_ask(self) -> bool:
        """A model is there to ask: the session's, or the panel's own executor (tests, scripts)."""
        return self.panel.executor is not None or self.panel.session.model is not None

    @property
    def busy(self) -> bool:
        """A question is unanswered: running, or waiting for the one running."""
        return self.call.running or self.waiting is not None

    def ask(self, key, job: Job) -> bool:
        if key == self.asked or key == self.stopped or not self.can_ask():
            return False
        self.stopped = None                 # another question: the stopped one is asked again once asked
        if self.call.running:
            self.waiting = (key, job)
            return False
        self.asked = key
        return self.call.start(job, self.panel.executor or self.panel.session.requests.model_job_requested.emit)

    def forget(self) -> None:
        """Ask again next time, even for the same key (the model changed)."""
        self.asked = None
        self.stopped = None

    def stop(self) -> bool:
        """The person stopped the work (Stop, a Cancel): the job running is cancelled (its cancel flag set,
        which the model thread's job polls) and never handed on, and the key of the question left unanswered
        is not asked again until `resume` or another key; an answer already given stays asked (the same key
        asks nothing). Whether a question was still unanswered."""
        unanswered = self.busy
        if unanswered:
            self.stopped = self.waiting[0] if self.waiting is not None else self.asked
            self.asked = None               # the question running, cut off, is asked again once asked again
        self.waiting = None
        self.call.abandon("")
        return unanswered

    def resume(self) -> None:
        """The person asks again (Compute, Resume), or another run or model came: the stopped key is asked
        at the next question."""
        self.stopped = None
        self.asked = None

    def drop(self) -> None:
        """Wait for no answer any more (another model or run, a cancel): nothing asked before is handed on,
        and the next question is asked at once, even the same one, unless it is the key stopped (`stop`)."""
        self.waiting = None
        self.asked = None
        self.call.abandon("")

    def _finished(self, result) -> None:
        if self._ask_waiting():
            return
        self.on_answer(self.asked, result)

    def _failed(self, message: str) -> None:
        self.asked = None
        if not self._ask_waiting() and message:           # "": dropped on purpose, nothing to say
            self.on_failure(message)

    def _ask_waiting(self) -> bool:
        waiting, self.waiting = self.waiting, None
        if waiting is None or waiting[0] == self.asked:
            return False
        return self.ask(*waiting)
