"""The GUI's handle on the model thread (its loop is decode_loop.DecodeLoop), so the GUI thread never
waits on torch.

The GUI pushes requests into a `RequestQueue`. Requests that have not started yet
are coalesced: three Step presses become one Step(3), a Back eats a queued Step,
and a new Prefill or Load drops the decoding queued behind the old prompt and
cancels the one in flight. The thread drains the queue and hands back a new,
immutable Trace after every change through Qt signals.

The worker is a daemon `threading.Thread` rather than a QThread: a QThread still
running when the app quits aborts the process, while a daemon thread busy in a
long torch call simply ends with it. Its signals are emitted from that thread
and delivered, queued, to `ModelWorker` on the GUI thread.
"""
from __future__ import annotations

import time

from PySide6.QtCore import QObject, Qt, QTimer, Signal, Slot

from explorer.app.thread import preload, threads
from explorer.app.thread.core_api import CoreApi, LoadedSummary, SamplingSettings
from explorer.app.thread.decode_loop import DecodeLoop
from explorer.app.thread.emitter import Emitter
from explorer.app.thread.request_queue import RequestQueue
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
    Unload,
)

__all__ = ["ModelWorker", "SamplingSettings", "LoadedSummary"]
PAUSE_PAINTED_MS = 60       # of the event loop after a load's Pause is said, to show and paint it before the pause


class ModelWorker(QObject):
    """The GUI's handle on the model thread: push requests, receive traces and errors as signals."""

    trace_ready = Signal(object)        # Trace, the newest state of the decoder
    model_loaded = Signal(object)       # LoadedSummary of the model loaded as asked
    model_loaded_late = Signal(object)  # LoadedSummary of a model the thread switched to after its load was
                                        # cancelled: it now holds that one, not the one before (see holds_unwanted)
    lens_ready = Signal(object)         # {"position": int, "ids": (L, k), "probs": (L, k)}
    candidates_ready = Signal(object)   # {"position": int, "ids": (k,), "probs": (k,), "token": id at position}
    failed = Signal(str)                # one sentence for a dialog
    load_failed = Signal(str)           # the model reference that could not be loaded (failed follows)
    notice = Signal(str)                # something the person should know, e.g. a CPU fallback
    progress = Signal(float, str)       # loading progress in [0, 1] (negative: unknown) and a message
    pausing = Signal()                  # a load's next call holds every thread a while: show its progress now
    run_progress = Signal(float, str)   # a prefill's progress, layer by layer, and what runs
    run_waiting = Signal(str)           # a run of the prompt just asked waits behind a panel's job: what it waits for
    jobs_changed = Signal(object)       # RequestQueue.jobs: what the model thread runs, and the jobs that wait
    devices_found = Signal(object)      # {device: [dtypes]}
    busy_changed = Signal(bool)
    _loaded_as = Signal(object, int)    # a model the thread switched to, and the seq of its Load

    def __init__(self, core: CoreApi | None = None, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._queue = RequestQueue()
        self._emitter = Emitter()
        self._busy = False
        self._latest_trace = None
        self._loads_dropped_through = -1    # a Load up to this seq is no longer awaited (cancelled or superseded)
        self._unloaded_at = -1              # the seq of the last Unload pushed
        self.holds_unwanted = False         # the thread switched to a model after its load was cancelled
        self._emitter.trace_ready.connect(self._on_trace_ready)
        # Direct: read on the model thread while the Load that switched runs, so its seq goes with the news.
        self._emitter.model_loaded.connect(self._on_switched, Qt.ConnectionType.DirectConnection)
        self._loaded_as.connect(self._on_loaded_as)
        self._emitter.lens_ready.connect(self.lens_ready)
        self._emitter.candidates_ready.connect(self.candidates_ready)
        self._emitter.failed.connect(self.failed)
        self._emitter.load_failed.connect(self.load_failed)
        self._emitter.notice.connect(self.notice)
        self._emitter.progress.connect(self.progress)
        self._emitter.pausing.connect(self._on_pausing)
        self._emitter.run_progress.connect(self.run_progress)
        self._emitter.devices_found.connect(self.devices_found)
        self._emitter.state_changed.connect(self._on_state_changed)
        self._emitter.jobs_changed.connect(self._on_jobs_changed)
        self._core = core or CoreApi.real()
        self._loop = DecodeLoop(self._queue, self._emitter, self._core)   # read by tests when idle
        self._thread = preload.adopt(self._loop.run_forever)      # the thread started at launch, if any
        if self._thread is None:
            self._thread = threads.start(self._loop.run_forever, "model-worker", stop=self._queue.close)
        else:
            threads.adopt(self._thread, stop=self._queue.close)

    @Slot(float, str, object)
    def _on_pausing(self, fraction: float, message: str, shown) -> None:
        """A load says a Pause (core/loaders/load_progress): its words, then `pausing`, and the model thread goes
        on once the event loop had PAUSE_PAINTED_MS to paint them. The timer holds a function of its own, not the
        Event's bound method: for that, PySide hung a weak reference on the Event, which the model thread drops
        when it has waited, and PySide's disconnection then ran there (SIGSEGV in Connection's destructor, loaded
        machine, a load's copy Pause)."""
        self.progress.emit(fraction, message)
        self.pausing.emit()
        QTimer.singleShot(PAUSE_PAINTED_MS, lambda: shown.set())

    # ----- requests (GUI thread) -----------------------------------------------------
    def load(self, path: str, device: str = "cpu", dtype: str = "float32") -> None:
        self._core.prefetch(str(path))          # its weights are read while the model thread is busy
        self._loads_dropped_through = self._queue.pushed() - 1     # a load asked before is superseded
        self._push(Load(path=str(path), device=device, dtype=dtype))

    def unload(self) -> None:
        """Let go of the model (File ▸ Close Model): what is queued and running is dropped, as for a load."""
        self._core.prefetch(None)
        self._push(Unload())
        self._unloaded_at = self._loads_dropped_through = self._queue.pushed() - 1
        self.holds_unwanted = False

    def prefill(self, ids) -> None:
        self._push(Prefill(ids=tuple(int(i) for i in ids)))

    def step(self, count: int = 1) -> None:
        self._push(Step(count=count))

    def back(self, count: int = 1) -> None:
        self._push(Back(count=count))

    def force(self, token_id: int, at_steps: int) -> None:
        """Branch: make `token_id` the choice after step `at_steps` (the step the person was looking at)."""
        self._push(Force(token_id=int(token_id), at_steps=int(at_steps)))

    def replay(self, ids, forced=(), n_steps: int = 1, decoded=()) -> None:
        """Rebuild a trace: `decoded` (one id per step) gives back the tokens it decoded, not the sampling's now."""
        self._push(Replay(ids=tuple(int(i) for i in ids), forced=tuple(forced), n_steps=int(n_steps),
                          decoded=tuple(int(i) for i in decoded)))

    def set_sampling(self, sampling: SamplingSettings) -> None:
        self._push(SetSampling(sampling=sampling))

    def set_recording(self, dtype: str, redo: bool = True) -> None:
        self._push(SetRecording(dtype=dtype, redo=redo))

    def set_intervention(self, intervention, redo: bool = True) -> None:
        """Redo the current run under `intervention` (None: none) and decode under it from then on."""
        self._push(SetIntervention(intervention=intervention, redo=redo))

    def logit_lens(self, position: int, k: int = 5) -> None:
        self._push(LogitLens(position=int(position), k=int(k)))

    def candidates(self, position: int, k: int = 10) -> None:
        self._push(Candidates(position=int(position), k=int(k)))

    def run_job(self, job) -> None:
        """Run `job(loaded, cancelled)` on the model thread, after what is queued (see requests.ModelJob)."""
        self._push(ModelJob(job=job))

    def cancel(self, discard_traces: bool = False) -> None:
        """Drop what is queued and stop what runs at its next step or progress report.

        With `discard_traces`, no trace from anything asked so far is handed on, not even one
        finishing now (Reset: the step in flight must not bring the cleared trace back).
        """
        if discard_traces:
            self._latest_trace = None
        self._loads_dropped_through = self._queue.pushed() - 1
        self._queue.cancel(discard=discard_traces)
        self._core.prefetch(None)               # weights read ahead for a load dropped here are let go

    def shutdown(self, timeout_s: float = 5.0) -> bool:
        """Cancel everything and let the thread end; True when it ended within the timeout. Whatever still
        runs then (one long torch call) is joined at exit (threads.stop_all), never left to abort it."""
        self._queue.close()
        self._thread.join(timeout_s)
        return not self._thread.is_alive()

    # ----- a model switched to --------------------------------------------------------
    def _on_switched(self, summary) -> None:
        """On the model thread, as the Load that switched models ends: its seq is the request running."""
        self._loaded_as.emit(summary, self._loop.seq)

    @Slot(object, int)
    def _on_loaded_as(self, summary, seq: int) -> None:
        """A Cancel (or another load) pressed after the model thread had switched, but before the GUI heard of
        it, wins: the model is not handed on as loaded. Unless an Unload follows, the thread now holds a model
        nobody asked for (holds_unwanted), and the one before is gone from it: model_loaded_late says so."""
        if seq > self._loads_dropped_through:
            self.holds_unwanted = False
            self.model_loaded.emit(summary)
        elif seq > self._unloaded_at:
            self.holds_unwanted = True
            self.model_loaded_late.emit(summary)

    # ----- state ------------------------------------------------------------------
    @property
    def busy(self) -> bool:
        return self._busy

    def pending_steps(self) -> int:
        return self._queue.pending_steps()

    def plan(self) -> tuple[int | None, int]:
        """Where the trace is headed before the worker is idle: see `RequestQueue.plan`."""
        return self._queue.plan()

    def _push(self, request) -> None:
        self._queue.push(request)
        self._set_busy(True)
        self.jobs_changed.emit(self._queue.jobs())
        ahead = self._queue.jobs_ahead()
        if ahead:                               # its dialog says so, rather than nothing or a stale bar
            names = " and ".join(dict.fromkeys(ahead))
            self.run_waiting.emit(f"Waiting for {names} to finish; then the prompt runs…")

    @Slot(object, int)
    def _on_trace_ready(self, trace, seq: int) -> None:
        # Traces that arrive together are coalesced: only the newest is handed on.
        if seq <= self._queue.discarded_through():
            return
        if not trace.steps:                     # a run stopped half way: the GUI hears of it, whatever follows
            self._flush_trace()
            self.trace_ready.emit(trace)
            return
        if self._latest_trace is None:
            QTimer.singleShot(0, self._flush_trace)
        self._latest_trace = trace

    def _flush_trace(self) -> None:
        trace, self._latest_trace = self._latest_trace, None
        if trace is not None:
            self.trace_ready.emit(trace)

    @Slot(object)
    def _on_jobs_changed(self, _jobs: dict) -> None:
        # Read again as the news arrives: the model thread's own snapshot, queued behind the GUI's pushes, would
        # undo a job pushed since (a comparison read as asked by nobody while it waited behind the head atlas).
        self.jobs_changed.emit(self._queue.jobs())

    @Slot(int)
    def _on_state_changed(self, idle_at: int) -> None:
        # Idle only if the worker was idle after the last request pushed: then every trace it sent
        # before this news has arrived too (a live `queue.idle()` would race the queued traces).
        self._flush_trace()
        self.jobs_changed.emit(self._queue.jobs())
        if idle_at == self._queue.pushed():
            self._set_busy(False)

    def _set_busy(self, busy: bool) -> None:
        if busy != self._busy:
            self._busy = busy
            self.busy_changed.emit(busy)


def wait_until_idle(worker: ModelWorker, app, timeout_s: float = 120.0) -> bool:
    """Process events until the worker has nothing left to do (for the self-test and scripts)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        app.processEvents()
        if not worker.busy:
            return True
        time.sleep(0.01)
    return False
