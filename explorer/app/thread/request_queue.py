"""The queue of what the GUI asks the model thread (explorer.app.thread.requests), which coalesces those asks.

A request that has not started yet may be merged with the next one (Step + Step
is Step(2); Step + Back cancel out) or dropped when a newer request makes it
pointless (a new prompt drops the steps queued for the old one). A replay of the
very trace a running replay rebuilds joins it rather than cancelling it. A person's
own request (a run, a step, a setting, a model) goes ahead of the panels' background
jobs queued (`_priority`), and a job running that checks its cancel flag yields to it
(`JobYields`). Every change happens under one lock, so the GUI thread and the model
thread can never see half a queue.
"""
from __future__ import annotations

import threading
from dataclasses import replace

from explorer.app.thread.requests import (
    Back,
    Candidates,
    Force,
    Load,
    LogitLens,
    ModelJob,
    Prefill,
    Replay,
    SetIntervention,
    SetRecording,
    SetSampling,
    Step,
    Sync,
    Unload,
)


class Cancelled(Exception):
    """The running request was cancelled; the worker drops it silently."""


class JobYields(BaseException):
    """Raised by a panel's job's cancel check while a person's request waits (`RequestQueue.yields`): the job
    stops there and is queued again behind that request. A BaseException, as asyncio.CancelledError is, so that
    the job's own `except Exception` (ModelCall's, which would answer "failed") lets it through unanswered."""


_DECODING = (Prefill, Step, Back, Force, Replay, LogitLens, Candidates)
_SETTINGS = (SetSampling, SetRecording, SetIntervention)       # kept by a cancel and by a new model
_NEW_MODEL = (Load, Unload)                                    # another model, or none: the trace starts over
_STARTS_OVER = (*_NEW_MODEL, Prefill, Replay)                  # set the decoder anew: a give-back before is wasted


PERSON, BACKGROUND = 0, 1     # the priorities: what a person asked directly runs before the panels' own jobs


def _priority(request) -> int:
    """A panel's model job (the head atlas's scoring, an attribution) is background work that a person's direct
    action (Run, Step, an Alt-click's replay, a setting, a model) goes ahead of; the one place that says so."""
    return BACKGROUND if isinstance(request, ModelJob) else PERSON


def asked_by_person(request) -> bool:
    """Whether `request` is a person's direct action, not a panel's background job (_priority)."""
    return _priority(request) == PERSON


def _start_length(request, otherwise: int | None) -> int | None:
    """The trace length a prefill or replay starts over at; `otherwise` for any other request."""
    if isinstance(request, Prefill):
        return len(request.ids)
    if isinstance(request, Replay):
        return len(request.ids) + request.n_steps - 1
    return otherwise


def _what(request) -> str:
    """A request in words, for a run or job that waits behind it."""
    if isinstance(request, ModelJob):
        return getattr(request.job, "what", "") or "another job on the model"
    return "the run of the prompt"


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
        self._discarded_through = -1        # traces of requests up to this seq are not handed on to the window
        self._running_done = 0              # traces handed back by the running request so far
        self._owed: Replay | None = None    # a give-back that waits for the next request (give_back_unless_replaced)

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

    def cancel(self, discard: bool = False) -> None:
        """Drop every queued load and decoding request and cancel the running one. A give-back the model thread
        queued stays (the window shows its trace, which the decoder must hold again), unless `discard`: no trace
        of a request asked so far is handed on, and the window decides alone what it shows."""
        with self._lock:
            self._pending = [r for r in self._pending
                             if isinstance(r, _SETTINGS) or (isinstance(r, Replay) and r.give_back and not discard)]
            if self._running is not None:
                self._cancelled.add(self._running.seq)
            if discard:
                self._discarded_through = self._next_seq - 1
                self._owed = None
            self._sync_if_nothing_left()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._pending = []
            self._owed = None
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

    def discarded_through(self) -> int:
        """The seq up to which the traces of requests are not handed on (a Stop or Reset that discards them)."""
        with self._lock:
            return self._discarded_through

    def jobs_ahead(self) -> list[str]:
        """What the person's request queued last waits behind, where it runs the prompt: the `what` of each
        panel's model job running or queued before it (see `_order`), else none."""
        with self._lock:
            order = self._order()
            asked = [index for index, request in enumerate(order)
                     if request is not self._running and _priority(request) == PERSON]
            last = order[asked[-1]] if asked else None
            if not (isinstance(last, (Prefill, Replay)) or getattr(last, "redo", False)):
                return []
            return [_what(r) for r in order[:asked[-1]] if isinstance(r, ModelJob)]

    def jobs(self) -> dict:
        """What the model thread is doing and what waits, in words: {"running": the `what` of the request running
        (None: nothing), "queued": the `what` of each panel's job queued, in order}. A comparison queued behind
        the head atlas says so from this (the Next token panel)."""
        with self._lock:
            order = self._order()
            running = order[0] if order and order[0] is self._running else None
            return {"running": None if running is None else _what(running),
                    "queued": tuple(_what(r) for r in order[running is not None:] if isinstance(r, ModelJob))}

    def yields(self, request) -> bool:
        """Whether the running `request`, a panel's job, should stop at its cancel check for a person's request
        queued behind it (JobYields): that one runs first, and the job again after it."""
        with self._lock:
            return (request is self._running and not self._closed and request.seq not in self._cancelled
                    and any(_priority(r) < _priority(request) for r in self._pending))

    def requeue(self, request) -> None:
        """Queue `request`, a job that yielded, again: first among the jobs of its priority, as it was."""
        with self._lock:
            if self._closed or request.seq in self._cancelled:
                return
            at = next((i for i, r in enumerate(self._pending) if _priority(r) >= _priority(request)),
                      len(self._pending))
            self._pending.insert(at, request)
            self._lock.notify_all()

    def pending(self) -> list:
        with self._lock:
            return list(self._pending)

    def starts_over(self, loads: bool = True) -> bool:
        """Whether a queued request will start the trace over (a load unless not `loads`, a prefill, a replay):
        a redo of the current trace now would be thrown away, and a trace emptied now needs no word to the GUI."""
        kinds = _STARTS_OVER if loads else (Prefill, Replay)
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
            self._running = self._owed_give_back() or self._pending.pop(0)
            self._running_done = 0
            return self._running

    def give_back(self, replay: Replay) -> bool:
        """Queue `replay`, which gives the decoder back the trace the window shows, first, before any request
        that reads the decoder; False (nothing queued) when a queued request starts the trace over anyway."""
        with self._lock:
            if self._closed or any(isinstance(r, _STARTS_OVER) for r in self._pending):
                return False
            self._pending.insert(0, self._numbered(replay))
            self._lock.notify_all()
            return True

    def give_back_unless_replaced(self, replay: Replay) -> None:
        """Owe `replay` (give_back's) for a decoder the GUI's own word emptied (a record dtype set with redo False,
        as a session opens): the run that replaces it may still be on its way, so the give-back waits for the
        next request that reads the decoder and is dropped once a request that starts the trace over is queued
        (otherwise the model thread replayed the trace shown, only to throw it away for the session's)."""
        with self._lock:
            if not self._closed and not any(isinstance(r, _STARTS_OVER) for r in self._pending):
                self._owed = replay

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

    # ----- order (lock held) -----------------------------------------------------------
    def _order(self) -> list:
        """The requests in the order the model thread runs them: the running one, unless it was cancelled (it
        ends at its next check and nothing waits for it), then those queued."""
        running = self._running
        alive = running is not None and running.seq not in self._cancelled
        return [running, *self._pending] if alive else list(self._pending)

    def _lane_end(self, request) -> int:
        """Where `request` is queued: after every request queued of its priority or a higher one (_priority)."""
        return next((i for i, r in enumerate(self._pending) if _priority(r) > _priority(request)),
                    len(self._pending))

    # ----- give-backs (lock held) -----------------------------------------------------
    def _numbered(self, replay: Replay) -> Replay:
        self._next_seq += 1
        return replace(replay, give_back=True, seq=self._next_seq - 1)

    def _owed_give_back(self) -> Replay | None:
        """The owed give-back, to run before the next request if that one reads the decoder's trace (a decoding
        request, or a setting that redoes the run); forgotten if a request queued starts the trace over."""
        owed, head = self._owed, self._pending[0]
        if owed is None:
            return None
        if any(isinstance(r, _STARTS_OVER) for r in self._pending):
            self._owed = None
            return None
        if not (isinstance(head, _DECODING) or getattr(head, "redo", False)):
            return None                     # a setting or a panel's job: the decoder's trace is not read
        self._owed = None
        return self._numbered(owed)

    # ----- coalescing (lock held) -----------------------------------------------------
    def _coalesce(self, request) -> None:
        at = self._lane_end(request) - 1      # the request it would be queued right behind, merged with
        last = self._pending[at] if at >= 0 else None
        if isinstance(request, _NEW_MODEL):
            self._pending = [r for r in self._pending if isinstance(r, _SETTINGS)]   # settings stay
            self._cancel_running(lambda running: True)
        elif isinstance(request, (Prefill, Replay)):
            self._pending = [r for r in self._pending if not isinstance(r, _DECODING)]
            if self._replaying(request):
                return                      # it joins the replay running: that one ends with the same trace
            self._cancel_running(lambda running: isinstance(running, _DECODING))
        elif isinstance(request, Step) and isinstance(last, Step):
            self._pending[at] = replace(last, count=last.count + request.count, seq=request.seq)
            return
        elif isinstance(request, Back) and isinstance(last, Step):
            if last.count > request.count:
                self._pending[at] = replace(last, count=last.count - request.count, seq=request.seq)
            else:
                self._pending.pop(at)
                if last.count < request.count:
                    self._coalesce(replace(request, count=request.count - last.count))
            return
        elif isinstance(request, Back) and isinstance(last, Back):
            self._pending[at] = replace(last, count=last.count + request.count, seq=request.seq)
            return
        elif isinstance(request, SetIntervention) and isinstance(last, SetIntervention):
            self._pending[at] = request
            return
        elif isinstance(request, SetSampling) and isinstance(last, SetSampling):
            self._pending[at] = request
            return
        self._pending.insert(self._lane_end(request), request)

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
                and replace(running, seq=request.seq, give_back=request.give_back) == request)

    def _cancel_running(self, applies) -> None:
        if self._running is not None and applies(self._running):
            self._cancelled.add(self._running.seq)
