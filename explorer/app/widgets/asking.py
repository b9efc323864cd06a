"""One question at a time to the model thread, for the panels that need the model itself (model_call.py).

A panel asks with a key (what the answer depends on: the tokens, the position, the token) and a job;
the same key again asks nothing, a new key asked while a job runs is asked once that job answers,
and only the answer to the latest key is handed on.
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
        panel.askers.append(self)           # the panel drops its questions on a model switch, a cancel (base.Panel)

    def can_ask(self) -> bool:
        """A model is there to ask: the session's, or the panel's own executor (tests, scripts)."""
        return self.panel.executor is not None or self.panel.session.model is not None

    def ask(self, key, job: Job) -> bool:
        if key == self.asked or not self.can_ask():
            return False
        if self.call.running:
            self.waiting = (key, job)
            return False
        self.asked = key
        return self.call.start(job, self.panel.executor or self.panel.session.requests.model_job_requested.emit)

    def forget(self) -> None:
        """Ask again next time, even for the same key (the model changed)."""
        self.asked = None

    def drop(self) -> None:
        """Wait for no answer any more (another model or run, a cancel): nothing asked before is handed on,
        and the next question is asked at once, even the same one."""
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
