"""What the GUI asks the model thread to do, and the queue that coalesces those asks.

A request that has not started yet may be merged with the next one (Step + Step
is Step(2); Step + Back cancel out) or dropped when a newer request makes it
pointless (a new prompt drops the steps queued for the old one). A replay of the
very trace a running replay rebuilds joins it rather than cancelling it. Every change
happens under one lock, so the GUI thread and the model thread can never see
half a queue.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, replace


class Cancelled(Exception):
    """The running request was cancelled; the worker drops it silently."""


@dataclass(frozen=True)
class Load:
    path: str
    device: str = "cpu"
    dtype: str = "float32"
    seq: int = -1


@dataclass(frozen=True)
class Prefill:
    ids: tuple[int, ...]
    seq: int = -1


@dataclass(frozen=True)
class Step:
    count: int = 1
    seq: int = -1


@dataclass(frozen=True)
class Back:
    count: int = 1
    seq: int = -1


@dataclass(frozen=True)
class Force:
    token_id: int
    at_steps: int                   # the trace length the person was looking at when choosing
    seq: int = -1


@dataclass(frozen=True)
class Replay:
    """Rebuild a trace exactly: prefill `ids`, then step, forcing `forced` (step index, id) on the way."""

    ids: tuple[int, ...]
    forced: tuple[tuple[int, int], ...] = ()
    n_steps: int = 1
    seq: int = -1


@dataclass(frozen=True)
class LogitLens:
    """Read the residual stream after every layer at `position` through the unembedding."""

    position: int
    k: int = 5
    seq: int = -1


@dataclass(frozen=True)
class Candidates:
    """The top-k next tokens after `position`, for a prompt position the trace did not record them at."""

    position: int
    k: int = 10
    seq: int = -1


@dataclass(frozen=True)
class SetRecording:
    """Record the trace's arrays in `dtype` ("float32" or "float16"); the current run is redone in it."""

    dtype: str
    redo: bool = True               # False: a run asked next replaces the current one (a session opened)
    seq: int = -1


@dataclass(frozen=True)
class SetSampling:
    sampling: object
    seq: int = -1


@dataclass(frozen=True)
class SetIntervention:
    """Run under `intervention` (explorer.core.intervention.Intervention, None: none): the current run is
    redone under it, a branch, and decoding continues under it."""

    intervention: object
    redo: bool = True               # False: a run asked next replaces the current one (a session opened)
    seq: int = -1


@dataclass(frozen=True)
class Sync:
    """Nothing to do: queued by a cancel that leaves no request to finish, so the GUI still learns it is idle."""

    seq: int = -1


@dataclass(frozen=True)
class ModelJob:
    """Run `job(loaded, cancelled)` with the model this thread holds: the KV lab's conversions and the
    Q/K/V panel's weights use it, so the app keeps one copy of the model and torch stays off the GUI thread.
    `cancelled()` turns true when the request is cancelled or superseded by a Load."""

    job: object
    seq: int = -1


# ----- named model jobs: what a panel asks of the loaded model, as values ----------------------
# A panel hands one of these to its ModelCall (as it would a job(loaded, progress, cancel)); the
# model-thread module core_api turns it into the torch-side call, so no panel imports torch-side core.
@dataclass(frozen=True)
class WhatIfJob:
    """The KV lab's conversion: `variant` of the loaded model against the original, `steps` steps."""

    variant: str
    steps: int
    prompt_ids: tuple[int, ...]

    def __call__(self, loaded, progress, cancel):
        from explorer.app.thread.core_api import run_named_job

        return run_named_job(self, loaded, progress, cancel)


@dataclass(frozen=True)
class HeadWeightsJob:
    """The Q/K/V panel's weights of one head: W^Q, W^K, W^V (and MLA's factors) of `layer`, `head`."""

    layer: int
    head: int

    def __call__(self, loaded, progress, cancel):
        from explorer.app.thread.core_api import run_named_job

        return run_named_job(self, loaded, progress, cancel)


class _NamedJob:
    """Run by core_api on the model thread, with the loaded model, like WhatIfJob and HeadWeightsJob."""

    def __call__(self, loaded, progress, cancel):
        from explorer.app.thread.core_api import run_named_job

        return run_named_job(self, loaded, progress, cancel)


@dataclass(frozen=True)
class AttributionJob(_NamedJob):
    """Why this token: the logit of `token` (None: the top prediction) after `position` of `ids`, split."""

    ids: tuple[int, ...]
    position: int
    token: int | None = None


@dataclass(frozen=True)
class ResidualStreamJob(_NamedJob):
    """The residual stream at `position` of `ids`: what each layer adds, and the logit lens's top `k`."""

    ids: tuple[int, ...]
    position: int
    k: int = 5


@dataclass(frozen=True)
class HeadScoresJob(_NamedJob):
    """The head atlas: previous-token, induction and sink scores on the model's random ids repeated twice."""


@dataclass(frozen=True)
class OutputWeightsJob(_NamedJob):
    """Show the work past y_i: the head's W^O_h, and MLA's W_h^UK (None for other attention kinds)."""

    layer: int
    head: int


@dataclass(frozen=True)
class BlockWalkJob(_NamedJob):
    """Show the work for a block: position `position` of `ids` through block `layer`."""

    ids: tuple[int, ...]
    layer: int
    position: int


@dataclass(frozen=True)
class CompareNextTokenJob(_NamedJob):
    """The Experiments dock: the top `k` next tokens after `ids`, before and under `intervention`
    (explorer.core.intervention.Intervention)."""

    ids: tuple[int, ...]
    intervention: object
    k: int


@dataclass(frozen=True)
class PatchMapJob(_NamedJob):
    """The patching tab's map: logit(`target`) - logit(`against`) of the `corrupt` prompt with each `site`
    ("head" or "resid") patched from the `clean` one."""

    clean: str
    corrupt: str
    target: str
    against: str
    site: str


_DECODING = (Prefill, Step, Back, Force, Replay, LogitLens, Candidates)
_SETTINGS = (SetSampling, SetRecording, SetIntervention)       # kept by a cancel and by a new model


def _start_length(request, otherwise: int | None) -> int | None:
    """The trace length a prefill or replay starts over at; `otherwise` for any other request."""
    if isinstance(request, Prefill):
        return len(request.ids)
    if isinstance(request, Replay):
        return len(request.ids) + request.n_steps - 1
    return otherwise


class RequestQueue:
    """A locked FIFO of requests with coalescing, cancellation and a 'closed' state."""

    def __init__(self) -> None:
        self._lock = threading.Condition()
        self._pending: list = []
        self._running = None
        self._cancelled: set[int] = set()
        self._next_seq = 0
        self._closed = False
        self._handed: int | None = None     # tokens of the last trace the model thread handed back
        self._running_done = 0              # traces handed back by the running request so far

    # ----- GUI thread -------------------------------------------------------------
    def push(self, request) -> None:
        with self._lock:
            if self._closed:
                return
            request = replace(request, seq=self._next_seq)
            self._next_seq += 1
            self._coalesce(request)
            self._sync_if_nothing_left()
            self._lock.notify_all()

    def cancel(self) -> None:
        """Drop every queued load and decoding request and cancel the running one."""
        with self._lock:
            self._pending = [r for r in self._pending if isinstance(r, _SETTINGS)]   # settings stay
            if self._running is not None:
                self._cancelled.add(self._running.seq)
            self._sync_if_nothing_left()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._pending = []
            if self._running is not None:
                self._cancelled.add(self._running.seq)
            self._lock.notify_all()

    def idle(self) -> bool:
        with self._lock:
            return not self._pending and self._running is None

    def pushed(self) -> int:
        """How many requests have been accepted so far."""
        with self._lock:
            return self._next_seq

    def pending_steps(self) -> int:
        with self._lock:
            return sum(r.count for r in self._pending if isinstance(r, Step))

    def plan(self) -> tuple[int | None, int]:
        """Where the trace is headed: its length before the steps still to come (None: no trace yet)
        and those steps. Backs and forces, which only shorten it, are not counted."""
        with self._lock:
            start, steps, running = self._handed, 0, self._running
            if isinstance(running, Step):
                steps = running.count - self._running_done
            elif running is not None and self._running_done == 0:
                start = _start_length(running, start)
            for request in self._pending:
                length = _start_length(request, None)
                if length is not None:
                    start, steps = length, 0
                elif isinstance(request, Step):
                    steps += request.count
            return start, steps

    def pending(self) -> list:
        with self._lock:
            return list(self._pending)

    def starts_over(self, loads: bool = True) -> bool:
        """Whether a queued request will start the trace over (a load unless not `loads`, a prefill, a replay):
        a redo of the current trace now would be thrown away, and a trace emptied now needs no word to the GUI."""
        kinds = (Load, Prefill, Replay) if loads else (Prefill, Replay)
        with self._lock:
            return any(isinstance(r, kinds) for r in self._pending)

    # ----- model thread -----------------------------------------------------------
    def take(self):
        """Block until a request is queued and return it; None once the queue is closed."""
        with self._lock:
            while not self._pending and not self._closed:
                self._lock.wait()
            if self._closed:
                return None
            self._running = self._pending.pop(0)
            self._running_done = 0
            return self._running

    def handed_back(self, n_tokens: int) -> None:
        """The model thread handed the GUI a trace of `n_tokens` tokens (see `plan`)."""
        with self._lock:
            self._handed = n_tokens
            self._running_done += 1

    def finish(self, request) -> int:
        """Mark `request` done; returns `pushed()` if nothing is left to do, else -1.

        The GUI compares that count with `pushed()` when the news arrives: equal
        means no request came since, and every trace sent before is delivered.
        """
        with self._lock:
            if self._running is request:
                self._running = None
            self._cancelled.discard(request.seq)
            return self._next_seq if not self._pending and self._running is None else -1

    def is_cancelled(self, request) -> bool:
        with self._lock:
            return self._closed or request.seq in self._cancelled

    def check(self, request) -> None:
        if self.is_cancelled(request):
            raise Cancelled()

    # ----- coalescing (lock held) -----------------------------------------------------
    def _coalesce(self, request) -> None:
        last = self._pending[-1] if self._pending else None
        if isinstance(request, Load):
            self._pending = [r for r in self._pending if isinstance(r, _SETTINGS)]   # settings stay
            self._cancel_running(lambda running: True)
        elif isinstance(request, (Prefill, Replay)):
            self._pending = [r for r in self._pending if not isinstance(r, _DECODING)]
            if self._replaying(request):
                return                      # it joins the replay running: that one ends with the same trace
            self._cancel_running(lambda running: isinstance(running, _DECODING))
        elif isinstance(request, Step) and isinstance(last, Step):
            self._pending[-1] = replace(last, count=last.count + request.count, seq=request.seq)
            return
        elif isinstance(request, Back) and isinstance(last, Step):
            if last.count > request.count:
                self._pending[-1] = replace(last, count=last.count - request.count, seq=request.seq)
            else:
                self._pending.pop()
                if last.count < request.count:
                    self._coalesce(replace(request, count=request.count - last.count))
            return
        elif isinstance(request, Back) and isinstance(last, Back):
            self._pending[-1] = replace(last, count=last.count + request.count, seq=request.seq)
            return
        elif isinstance(request, SetIntervention) and isinstance(last, SetIntervention):
            self._pending[-1] = request
            return
        elif isinstance(request, SetSampling) and isinstance(last, SetSampling):
            self._pending[-1] = request
            return
        self._pending.append(request)

    def _sync_if_nothing_left(self) -> None:
        """A push eaten by coalescing (Back after Step) or a cancel can leave nothing to finish; then
        queue a Sync, whose finish tells the GUI that it is idle."""
        if not self._pending and self._running is None and not self._closed:
            self._pending.append(Sync(seq=self._next_seq))
            self._next_seq += 1
            self._lock.notify_all()

    def _replaying(self, request) -> bool:
        """Whether `request` replays exactly the trace the running replay (not cancelled) rebuilds."""
        running = self._running
        return (isinstance(request, Replay) and isinstance(running, Replay) and running.seq not in self._cancelled
                and replace(running, seq=request.seq) == request)

    def _cancel_running(self, applies) -> None:
        if self._running is not None and applies(self._running):
            self._cancelled.add(self._running.seq)
