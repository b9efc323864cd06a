"""The model thread's side of the worker: the loop that takes requests, runs the Decoder and hands
back traces and answers as Qt signals (queued to the GUI thread, see worker.ModelWorker).

Only this thread touches the Decoder, so a trace a panel holds can never change under it.
"""
from __future__ import annotations

import sys
import threading
import traceback
from contextlib import contextmanager
from dataclasses import dataclass, replace

import shiboken6

from explorer.app.thread import person_request, threads
from explorer.app.thread.core_api import CoreApi, LoadedSummary, SamplingSettings, is_out_of_memory, lending
from explorer.app.thread.emitter import Emitter
from explorer.app.thread.pass_progress import layer_progress, prefill_share, replay_words, step_progress
from explorer.app.thread.replay import holds, redo_arguments, replay_arguments, replay_steps
from explorer.app.thread.request_queue import Cancelled, JobYields, RequestQueue, asked_by_person
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
from explorer.core.errors import ExplorerError
from explorer.core.loaders.load_progress import Pause
from explorer.views.words import plural

PAUSE_SHOWN_WAIT_S = 1.0    # the most a load waits for the window to show its Pause, whatever happens there


@dataclass
class _State:
    """What the worker thread holds: the core objects. Touched only on that thread."""

    loaded: object = None
    decoder: object = None
    load_request: Load | None = None


class DecodeLoop:
    """The worker thread's side: takes requests off the queue and runs them on the core."""

    def __init__(self, queue: RequestQueue, emitter: Emitter, core: CoreApi) -> None:
        self._queue = queue
        self._emit = emitter
        self._core = core
        self._state = _State()
        self._shown = None                  # the last trace handed to the GUI
        self._shown_seq = -1                # the seq of the request that handed it
        self._seq = -1                      # the seq of the request running
        self._sampling = SamplingSettings()
        self._record_dtype = "float32"
        self._intervention = None           # the Experiments dock's, applied to every decoder made here
        self._held_is_current = False       # the decoder's trace is what a replay of it gives under the settings now
        self._handlers = {Load: self._load, Prefill: self._prefill, Step: self._step, Back: self._back,
                          Force: self._force, Replay: self._replay, SetSampling: self._set_sampling,
                          SetRecording: self._set_recording, SetIntervention: self._set_intervention,
                          LogitLens: self._logit_lens, Candidates: self._candidates, ModelJob: self._model_job,
                          Sync: lambda request: None, Unload: self._unload}

    @property
    def seq(self) -> int:
        """The seq of the request running (-1 before the first); read on this thread only."""
        return self._seq

    def run_forever(self) -> None:
        try:
            self._emit.devices_found.emit(self._core.available_devices())
        except Exception as error:  # the device probe must never stop the worker
            self._emit.notice.emit(f"Could not list devices ({error}); using the CPU.")
            self._emit.devices_found.emit({"cpu": ["float32"]})
        while True:
            request = self._queue.take()
            if request is None:
                return
            try:
                self._run_one(request)
            except RuntimeError:
                if shiboken6.isValid(self._emit):
                    raise
                return          # the window was closed and deleted under the request: nobody left to answer
            finally:            # a panel's job it holds is let go on the GUI thread (threads.py)
                threads.let_go(request)
                del request

    def _run_one(self, request) -> None:
        self._seq = request.seq
        self._emit.jobs_changed.emit(self._queue.jobs())
        try:
            with person_request.running_one(asked_by_person(request)):   # the views' threads wait meanwhile
                self._attempt(request, self._handlers[type(request)])
        finally:
            self._keep_shown(request)
            self._emit.state_changed.emit(self._queue.finish(request))

    def _hand_back(self, trace) -> None:
        self._shown, self._shown_seq = trace, self._seq
        self._queue.handed_back(trace.n_tokens)
        self._emit.trace_ready.emit(trace, self._seq)

    def _keep_shown(self, request) -> None:
        """Once a request ends, the decoder holds the trace the GUI shows, or is about to. A request cancelled
        or failed half way that changed the decoder (steps, a force after its backs) hands its trace back. A run
        stopped half way that emptied the decoder, or a replay stopped half way, gives the GUI's trace back
        first, before any request queued behind reads the decoder; a replay's half-rebuilt trace is never
        shown (the GUI still shows the whole one, which a Stop during its own give-back asks again). A record
        dtype set with redo False, on the GUI's word that a run replacing the emptied decoder follows, only owes
        the give-back: it is dropped if that run is queued before anything reads the decoder."""
        decoder = self._state.decoder
        if decoder is None or decoder.trace is self._shown:
            return
        rebuilding = not decoder.trace.steps or (isinstance(request, Replay) and self._queue.is_cancelled(request))
        if not rebuilding:
            self._hand_back(decoder.trace)
        elif self._window_keeps_shown():
            shown = Replay(**replay_arguments(self._shown))
            if getattr(request, "redo", True):
                self._queue.give_back(shown)
            else:                   # a run that replaces the emptied decoder follows, on the GUI's word
                self._queue.give_back_unless_replaced(shown)

    def _window_keeps_shown(self) -> bool:
        """Whether the GUI shows the last trace handed to it, and keeps it: a Stop or Reset that discards the
        traces asked before it leaves the GUI to decide alone what it shows (it gives its own trace back)."""
        shown = self._shown
        return shown is not None and bool(shown.steps) and self._shown_seq > self._queue.discarded_through()

    def _attempt(self, request, handler) -> None:
        try:
            handler(request)
        except Cancelled:
            pass
        except ExplorerError as error:
            self._fail(request, str(error))
        except Exception as error:
            if is_out_of_memory(error) and self._device_for(request) != "cpu":
                self._attempt(request, self._fall_back_to_cpu)
            else:
                traceback.print_exc(file=sys.stderr)
                self._fail(request, f"Internal error in {type(request).__name__.lower()}: {error}")

    def _fail(self, request, message: str) -> None:
        if isinstance(request, Load):
            self._emit.load_failed.emit(request.path)
        self._emit.failed.emit(message)

    # ----- requests ---------------------------------------------------------------
    def _load(self, request: Load) -> None:
        def progress(*args, **kwargs) -> None:
            if self._queue.is_cancelled(request):
                raise Cancelled()
            fraction, message = _progress_of(args, kwargs)
            if isinstance(message, Pause):      # shown before the call that holds every thread starts
                shown = threading.Event()
                self._emit.pausing.emit(fraction, str(message), shown)
                shown.wait(PAUSE_SHOWN_WAIT_S)
            else:
                self._emit.progress.emit(fraction, message)

        loaded = self._core.load_model(self._core.resolve(request.path), device=request.device, dtype=request.dtype,
                                       progress=progress)
        decoder = self._core.make_decoder(loaded, self._sampling, self._record_dtype)
        self._queue.check(request)          # just before the swap: a Cancel pressed until now keeps the model in use
        self._apply_intervention(decoder, loaded)
        self._state = _State(loaded=loaded, decoder=decoder, load_request=request)
        self._shown = None                  # the GUI drops the trace of the model before
        self._emit.model_loaded.emit(LoadedSummary.of(loaded, request))

    def _unload(self, request: Unload) -> None:
        """Let go of the model and its decoder (their memory is freed once nothing else holds them)."""
        self._state = _State()
        self._shown = None

    def _prefill(self, request: Prefill) -> None:
        """Run the prompt on a decoder of its own while the decoder holds a run, which it keeps until the new
        one has run: a Cancel half way then leaves the decoder on the trace shown, with nothing to replay
        (the pass of the whole prompt again was a second progress dialog the person had not asked for)."""
        kept = self._decoder()
        decoder = self._new_decoder(kept) if kept.trace.steps else kept
        with self._layer_progress(decoder, request, f"Prefilling {plural(len(request.ids), 'token')}"):
            trace = decoder.prefill(self._core.ids(request.ids))
        self._state = replace(self._state, decoder=decoder)
        self._held_is_current = True
        self._hand_back(trace)

    def _new_decoder(self, kept):
        """A decoder like `kept` (the model, sampling, record dtype and experiments now), with nothing run."""
        decoder = self._core.make_decoder(self._state.loaded, self._sampling, self._record_dtype)
        if hasattr(decoder, "set_intervention"):          # every core decoder (test doubles may lack it)
            decoder.set_intervention(getattr(kept, "intervention", None))
        return decoder

    @contextmanager
    def _layer_progress(self, decoder, request, what: str, share: float = 1.0):
        """While a prefill runs, report each layer done (pass_progress.layer_progress) and stop it between layers
        once the request is cancelled (the decoder's cache and trace are then empty). The emptied trace is handed
        back unless the model thread gives the GUI's trace back itself (_keep_shown), or a prefill or replay queued
        behind sets the decoder anew: read as a cancelled run, it would have the GUI give back the trace shown over
        the newer run."""
        try:
            with layer_progress(decoder, self._emit.run_progress.emit, lambda: self._queue.check(request), what,
                                share):
                yield
        except Cancelled:
            if decoder is not self._state.decoder:   # a prefill on a decoder of its own: the decoder kept its run
                if self._window_keeps_shown() and not self._queue.starts_over(loads=False):
                    self._emit.trace_ready.emit(decoder.trace, self._seq)      # the GUI hears of the cancel
            elif not (decoder.trace.steps or self._queue.starts_over(loads=False)):
                if self._window_keeps_shown():   # the GUI hears that the run was cancelled (its notice, its run
                    self._emit.trace_ready.emit(decoder.trace, self._seq)   # no longer awaited); _keep_shown
                else:                            # gives the decoder the GUI's trace back, before any read
                    self._hand_back(decoder.trace)   # stopped after the cache was reset: the decoder holds nothing
            raise

    def _step(self, request: Step) -> None:
        decoder = self._decoder(need_trace=True)
        for _ in range(request.count):
            self._queue.check(request)
            if self._ended(decoder):            # the model ended the text: no step past end-of-sequence
                return
            self._hand_back(decoder.step())

    def _ended(self, decoder) -> bool:
        eos = getattr(getattr(self._state.loaded, "tokenizer", None), "eos_id", None)
        steps = decoder.trace.steps
        return eos is not None and bool(steps) and steps[-1].chosen_id == eos

    def _back(self, request: Back) -> None:
        decoder = self._decoder(need_trace=True)
        count = min(request.count, decoder.trace.n_steps - 1)
        if count <= 0:
            return
        for _ in range(count):
            trace = decoder.back()
        self._hand_back(trace)

    def _force(self, request: Force) -> None:
        decoder = self._decoder(need_trace=True)
        while decoder.trace.n_steps > max(1, request.at_steps):
            decoder.back()
        self._hand_back(decoder.force(request.token_id))

    def _replay(self, request: Replay) -> None:
        """Rebuild the trace asked; one the decoder holds already (a cancelled run kept it) is handed back as it
        is, with no pass and no progress: the window's give-back after a Cancel must not run the prompt again."""
        decoder = self._decoder()
        if self._held_is_current and holds(decoder.trace, request):
            self._hand_back(decoder.trace)
            return
        self._run_again(decoder, self._core.ids(request.ids), dict(request.forced), request.n_steps, request,
                        request.decoded)

    def _run_again(self, decoder, ids, forced: dict, n_steps: int, request, decoded=()) -> None:
        """Prefill `ids`, then go to `n_steps` steps (replay.replay_steps: forced[i] forced, decoded[i] taken)."""
        what, share = replay_words(len(ids), n_steps), prefill_share(len(ids), n_steps)
        with self._layer_progress(decoder, request, what, share):
            trace = decoder.prefill(ids)
        check = step_progress(lambda: self._queue.check(request), self._emit.run_progress.emit, what, share,
                              n_steps - 1)
        trace = replay_steps(decoder, trace, forced, n_steps, decoded, check)
        self._held_is_current = True
        self._hand_back(trace)

    def _logit_lens(self, request: LogitLens) -> None:
        decoder = self._decoder_at(request.position)
        ids, probs = decoder.logit_lens(request.position, request.k)
        self._emit.lens_ready.emit({"position": request.position, "ids": ids, "probs": probs})

    def _candidates(self, request: Candidates) -> None:
        decoder = self._decoder_at(request.position)
        ids, probs = decoder.candidates_at(request.position, request.k)
        self._emit.candidates_ready.emit({"position": request.position, "ids": ids, "probs": probs,
                                          "token": int(decoder.trace.token_ids[request.position])})

    def _model_job(self, request: ModelJob) -> None:
        """Run a panel's job; one that checks its cancel flag while a person's request waits yields to it there
        (RequestQueue.yields) and is queued again, to run anew after it."""
        if self._state.loaded is None:
            raise ExplorerError("No model is loaded yet; open one from the Model menu first.")

        def cancelled() -> bool:
            if self._queue.is_cancelled(request):
                return True
            if self._queue.yields(request):
                raise JobYields()
            return False

        try:
            with lending(self._state.decoder):           # its cache serves one position's row
                request.job(self._state.loaded, cancelled)
        except JobYields:
            self._queue.requeue(request)

    def _set_recording(self, request: SetRecording) -> None:
        """A new decoder recording in the new dtype, which redoes the current run exactly."""
        self._record_dtype = request.dtype
        old = self._state.decoder
        if old is None:
            return
        decoder = self._core.make_decoder(self._state.loaded, self._sampling, self._record_dtype)
        self._apply_intervention(decoder, self._state.loaded)
        self._state = _State(loaded=self._state.loaded, decoder=decoder, load_request=self._state.load_request)
        self._redo(decoder, old.trace, request)

    def _redo(self, decoder, trace, request) -> None:
        """Run `trace`'s prompt, forced tokens and steps again on `decoder`, unless a run queued behind starts
        over anyway (a session opened: its replay follows its record dtype and experiments). Its decoded tokens
        stay where the request says the setting changes no choice (requests.SetRecording.keeps_decoded)."""
        if not trace.steps or not request.redo or self._queue.starts_over():
            return
        ids, forced, n_steps, decoded = redo_arguments(trace, request.keeps_decoded)
        self._run_again(decoder, ids, forced, n_steps, request, decoded)

    def _set_intervention(self, request: SetIntervention) -> None:
        """The current run again under the intervention (a branch); the steps after it decode under it too."""
        self._intervention = request.intervention
        self._held_is_current = False       # the trace held was run without it, until it is redone
        decoder = self._state.decoder
        if decoder is not None:
            self._apply_intervention(decoder, self._state.loaded)
            self._redo(decoder, decoder.trace, request)

    def _apply_intervention(self, decoder, loaded) -> None:
        intervention = self._intervention
        if intervention is not None:
            try:
                intervention.check(loaded.config.n_layers, loaded.config.n_heads)
            except ExplorerError as error:
                self._emit.notice.emit(f"The experiments do not fit this model ({error}); it runs without them.")
                intervention = None
        if hasattr(decoder, "set_intervention"):          # every core decoder (test doubles may lack it)
            decoder.set_intervention(intervention)

    def _set_sampling(self, request: SetSampling) -> None:
        if request.sampling != self._sampling:
            self._held_is_current = False   # a replay now would sample its steps otherwise
        self._sampling = request.sampling
        if self._state.decoder is not None:
            self._state.decoder.set_sampling(self._core.sampling(request.sampling))

    # ----- helpers ----------------------------------------------------------------
    def _decoder_at(self, position: int):
        """The decoder, when its trace has a token at `position`."""
        decoder = self._decoder(need_trace=True)
        if not 0 <= position < decoder.trace.n_tokens:
            raise ExplorerError(f"position {position} is not in the trace (0 to {decoder.trace.n_tokens - 1})")
        return decoder

    def _decoder(self, need_trace: bool = False):
        decoder = self._state.decoder
        if decoder is None:
            raise ExplorerError("No model is loaded yet; open one from the Model menu first.")
        if need_trace and not decoder.trace.steps:
            raise ExplorerError("Nothing has been run yet; press Run to prefill the prompt first.")
        return decoder

    def _device_for(self, request) -> str:
        if isinstance(request, Load):
            return request.device
        loaded_by = self._state.load_request
        return loaded_by.device if loaded_by is not None else "cpu"

    def _fall_back_to_cpu(self, failed_request) -> None:
        """The GPU ran out of memory: reload the same model on the CPU, replay the trace, retry."""
        old = self._state
        was_load = isinstance(failed_request, Load)
        source = failed_request if was_load else old.load_request
        trace = None if was_load or old.decoder is None else old.decoder.trace
        self._emit.notice.emit(f"Out of memory on {source.device}; the model now runs on the CPU.")
        self._state = _State()
        self._load(replace(source, device="cpu"))
        if trace is not None and trace.steps:
            self._replay(Replay(**replay_arguments(trace)))
        if not was_load:
            self._handlers[type(failed_request)](failed_request)


def _progress_of(args, kwargs) -> tuple[float, str]:
    """Read a loader's progress callback arguments, whatever their order: a fraction and a message."""
    fraction, message = -1.0, ""
    for value in list(args) + list(kwargs.values()):
        if isinstance(value, (int, float)) and not isinstance(value, bool) and fraction < 0:
            fraction = float(value)
        elif isinstance(value, str) and not message:
            message = value
    return fraction, message
