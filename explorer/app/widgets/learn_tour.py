"""The Learn path's stops (resources/learn/stops.json) and the driver that puts the window in a stop's state.

A stop's state is a model, a prompt, a number of decoding steps, a panel, a layer and head, the
attention (self, cross, encoder) and a kernel f_κ. `Tour.show(stop)` reaches it through the window's
own controller and session, one part after the other (load, then the kernel, run, step, select,
bring the panel forward), and says `reached` once the window shows it. The person's whole session is
kept from before the first stop shown, as File ▸ Save Session's value (in memory, never on disk), and
`restore()` puts it back by File ▸ Open Session's path: model, sampling, experiments, prompt and the decoded
tokens replayed, then the selection (layer, head, step) they were looking at.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path

from PySide6.QtCore import QObject, QTimer, Signal

from explorer.app.state.session_file import SessionState
from explorer.app.state.session_model import Selection
from explorer.app.widgets.kernel_control import is_layer_kernel, with_kernel
from explorer.app.window import model_refs
from explorer.core import store
from explorer.core.errors import ExplorerError
from explorer.core.intervention import Kernel

POLL_MS = 40
TIMEOUT_S = 300.0
STOP, BACK = "stop", "back"      # what the tour's one poller waits for: a stop's state, the person's session back


@dataclass(frozen=True)
class StopState:
    models: tuple[str, ...]                 # the first the store can open is used
    prompt: str | None = None               # None: the model's usual prompt (model_refs.default_prompt)
    panel: str = "attention"                # a dock's object name
    layer: int = 0
    head: int = 0
    attention: str = "self"
    kernel: str | None = None               # "linear", "relu", ...; None: the model's softmax
    steps: int = 0                          # decoding steps after the prompt


@dataclass(frozen=True)
class Try:
    """A question to try at a stop; `answer` names how "Show the answer" answers it (views.try_answers: a
    kind computed from the trace shown, or "text", this question's own `text`), None for none."""
    question: str
    answer: str | None = None
    layer: int | None = None                # the layer the question names, for an answer in one layer
    text: str = ""


@dataclass(frozen=True)
class Stop:
    id: str
    title: str
    text: str
    formula: str
    state: StopState
    tries: tuple[Try, ...] = field(default=())
    panels: tuple[str, ...] = field(default=())     # the docks whose title bar "?" opens this stop


def stops_file() -> Path:
    return store.resources_dir() / "learn" / "stops.json"


def load_stops(path: Path | None = None) -> tuple[Stop, ...]:
    """The path's stops, in order; ExplorerError naming the file when it cannot be read."""
    path = path or stops_file()
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        return tuple(Stop(id=s["id"], title=s["title"], text=s["text"], formula=s["formula"],
                          state=StopState(**{**s["state"], "models": tuple(s["state"]["models"])}),
                          tries=tuple(Try(t) if isinstance(t, str) else Try(**t) for t in s.get("try", ())),
                          panels=tuple(s.get("panels", ())))
                     for s in data["stops"])
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise ExplorerError(f"{path}: the Learn path cannot be read ({error}).") from None


def stop_of_panel(stops: tuple[Stop, ...]) -> dict[str, int]:
    """{dock object name: the index of the stop that explains it}, from the stops' own 'panels' lists (the one
    place that says which stop a panel's "?" opens); ExplorerError when two stops name one panel."""
    index_of: dict[str, int] = {}
    for index, stop in enumerate(stops):
        for panel in stop.panels:
            if panel in index_of:
                raise ExplorerError(f"{stops_file()}: the panel {panel!r} is named by the stops "
                                    f"{stops[index_of[panel]].id!r} and {stop.id!r}; a panel has one stop.")
            index_of[panel] = index
    return index_of


def available_model(models: tuple[str, ...]) -> str | None:
    """The first of `models` the store opens here (a bundled one always; a pulled one where it was pulled)."""
    for name in models:
        try:
            store.resolve(name)
        except ExplorerError:
            continue
        return name
    return None


@dataclass(frozen=True)
class OwnSession:
    """What the person had before the first stop was shown: the window's session as File ▸ Save Session writes
    it (model, prompt, sampling, the decoded tokens, experiments), what they had selected, and the token ids
    of their trace (empty: none), which the replay must give back."""

    reference: str | None
    state: SessionState
    selection: Selection
    token_ids: tuple[int, ...] = ()

    @property
    def prompt(self) -> str:
        return self.state.prompt

    @property
    def experiments(self) -> tuple:
        return self.state.experiments

    @classmethod
    def of(cls, window) -> "OwnSession":
        trace = window.session.trace
        ids = tuple(int(i) for i in trace.token_ids) if trace is not None and trace.steps else ()
        return cls(window.controller.reference, window.session_state(), window.session.selection, ids)


class Tour(QObject):
    reached = Signal(str)            # the stop's id: the window shows its state
    failed = Signal(str)             # one sentence
    progress = Signal(str)           # what is being done, for the panel's status line

    def __init__(self, window, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.window = window
        self.stop: Stop | None = None
        self.own: OwnSession | None = None
        self.added: tuple = ()                      # the kernel experiments the path added
        self._steps_left = 0
        self._deadline = 0.0
        self._back: OwnSession | None = None        # the session being put back, until its replay arrives
        self.waiting_for: str | None = None         # STOP or BACK while the poller runs, else None
        self._poller = QTimer(self)
        self._poller.setInterval(POLL_MS)
        self._poller.timeout.connect(self._poll)
        window.controller.load_failed.connect(self._on_load_failed)

    @property
    def busy(self) -> bool:
        return self.waiting_for is not None

    def _wait_for(self, what: str | None) -> None:
        """Poll every POLL_MS for `what` (STOP: the stop's state reached; BACK: the person's session back), which
        replaces whatever was awaited before; None: wait for nothing."""
        self.waiting_for = what
        if what is None:
            self._poller.stop()
        else:
            self._poller.start()

    def _poll(self) -> None:
        if self.waiting_for == STOP:
            self._poll_stop()
        elif self.waiting_for == BACK:
            self._poll_back()

    def show(self, stop: Stop) -> bool:
        """Start putting the window in `stop`'s state; False (and `failed`) when its model is not here."""
        model = available_model(stop.state.models)
        if model is None:
            self.failed.emit(f"{stop.title}: none of {', '.join(stop.state.models)} can be opened here.")
            return False
        w = self.window
        if self.own is None:        # a session still coming back is the person's, not what the window shows now
            self.own = self._back or OwnSession.of(w)
        self._wait_for(None)
        self._back = None
        self.stop, self._steps_left = stop, stop.state.steps
        self._deadline = time.monotonic() + TIMEOUT_S
        w.prompt.set_text(stop.state.prompt or model_refs.default_prompt(model))
        if self._is_open(model):
            self._run()
        else:
            self.progress.emit(f"Opening {model}…")
            w.controller.load(model, *w.model_bar.choice(), then=self._run)
        self._wait_for(STOP)
        return True

    def restore(self) -> str:
        """Put back the person's whole session (File ▸ Open Session's path, from memory): their model, sampling,
        experiments, prompt and decoded tokens replayed, then their selection; the sentence that says what is
        back. With no model of their own, the tour's model is closed (File ▸ Close Model): no model, as before."""
        own, self.own = self.own, None
        if own is None:
            return "Your own model and prompt are back."
        self._wait_for(None)
        self.added = ()
        w = self.window
        if own.reference is None:
            w.session.set_experiments(own.experiments, for_next_model=True)    # no model of theirs: the next one's
            w.prompt.set_text(own.prompt)
            w.menus.close_model()
            return "You had no model open: the tour's model is closed, and your prompt and experiments are back."
        w.restore_session(own.state)
        self._back, self._deadline = own, time.monotonic() + TIMEOUT_S
        self._wait_for(BACK)
        return "Your own model, prompt and decoded tokens are back."

    def _poll_back(self) -> None:
        """Once the replay of the person's session has arrived, their selection back on it."""
        w, own = self.window, self._back
        if time.monotonic() > self._deadline:
            self._wait_for(None)
            self.failed.emit(f"Your session did not come back within {TIMEOUT_S:.0f} s.")
            return
        if w.controller.loading is not None or w.worker.busy or w.session.model is None:
            return
        trace = w.session.trace
        if own.token_ids and (trace is None or len(trace.token_ids) < len(own.token_ids)):
            return
        self._wait_for(None)
        self._back = None
        s = own.selection
        w.session.select(layer=s.layer, head=s.head, attention=s.attention, step=s.step, token=s.token,
                         source=s.source, key=s.key)
        if own.token_ids and tuple(int(i) for i in trace.token_ids) != own.token_ids:
            # Only sampling settings changed since those steps give other tokens (a draw is fixed by seed
            # and position): say so rather than show other tokens as the person's.
            self.failed.emit("Your prompt and steps were replayed, but the sampling settings changed since "
                             "they were decoded, so the decoded tokens differ.")

    # ----- the parts of a state, in order -------------------------------------------------------
    def _is_open(self, model: str) -> bool:
        reference = self.window.controller.reference
        return self.window.controller.loading is None and reference is not None and \
            (reference == model or Path(reference).name == model)

    def _run(self) -> None:
        self._set_kernel()
        self.progress.emit("Running the prompt…")
        self.window.controller.run()

    def _set_kernel(self) -> None:
        """The stop's kernel in its layer, and none of the path's earlier kernels."""
        session, state = self.window.session, self.stop.state
        kept = tuple(e for e in session.experiments if e not in self.added)
        if state.kernel:
            where = "cross" if state.attention == "cross" else "self"
            experiments = with_kernel(kept, state.layer, where, Kernel(state.kernel))
            self.added = tuple(e for e in experiments if is_layer_kernel(e, state.layer, where) and e not in kept)
        else:
            experiments, self.added = kept, ()
        session.set_experiments(experiments)

    def _poll_stop(self) -> None:
        """The stop's state built a part at a time: the model open and run, then its steps decoded, one a poll."""
        w = self.window
        if time.monotonic() > self._deadline:
            self._wait_for(None)
            self.failed.emit(f"{self.stop.title}: the model did not answer within {TIMEOUT_S:.0f} s.")
            return
        if w.controller.loading is not None or w.worker.busy or w.session.trace is None:
            return
        if self._steps_left > 0:
            self._steps_left -= 1
            self.progress.emit(f"Decoding a step ({self.stop.state.steps - self._steps_left} of "
                               f"{self.stop.state.steps})…")
            w.controller.step()
            return
        self._wait_for(None)
        self._finish()

    def _finish(self) -> None:
        state, w = self.stop.state, self.window
        w.session.select(layer=state.layer, head=state.head, attention=state.attention, token=None, step=None)
        dock = getattr(w, "docks", {}).get(state.panel)
        if dock is not None:
            dock.show()
            dock.raise_()
        self.progress.emit("")
        self.reached.emit(self.stop.id)

    def _on_load_failed(self, reference: str) -> None:
        if self.waiting_for == STOP:
            self._wait_for(None)
            self.failed.emit(f"{reference} could not be opened.")
