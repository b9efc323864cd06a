"""The one place that holds what the app shows: the trace, the live tokens and the selection.

Data flows one way: the worker hands a new Trace to `set_trace`, the session
emits `trace_changed`, and every panel redraws from it. Interaction flows back
through `select(...)` and the `*_requested` intents; panels never call each other.

A model switch, a new trace, a cancel or an error reaches the panels through one signal,
`context_changed(Change)`: the panels redraw from it, and every change but a step of the same run
also makes them drop their running jobs and kept results (explorer.app.panels.base.Panel).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from PySide6.QtCore import QObject, Signal

from explorer.core.errors import ExplorerError
from explorer.core.intervention import Experiment, Intervention, describe
from explorer.core.trace import ModelInfo, Trace


# Why the panels hear a Change; all but TRACE drop the panels' running jobs and kept results.
MODEL, RUN, TRACE, CANCEL, ERROR = "model", "run", "trace", "cancel", "error"


@dataclass(frozen=True)
class Change:
    """What reached the panels: why, and the model and trace that are current from now on."""

    reason: str                 # MODEL | RUN | TRACE | CANCEL | ERROR
    model_id: int
    trace_id: int

    @property
    def drops_work(self) -> bool:
        """Whether jobs asked and results kept before no longer hold: everything but another step of one run."""
        return self.reason != TRACE


@dataclass(frozen=True)
class Selection:
    """What the person is looking at. `step=None` means the latest step; `token=None` means none."""

    token: int | None = None
    layer: int = 0
    head: int = 0
    step: int | None = None
    attention: str = "self"          # "self" | "cross" | "encoder"
    source: int | None = None        # an encoder-decoder's source token (`token` is a target token)


class Session(QObject):
    """Holds the trace and the selection; emits `<noun>_changed` only when something changed."""

    trace_changed = Signal(object)        # Trace | None
    tokens_changed = Signal(object)       # explorer.core.tokens.Tokens of the prompt, before any run
    selection_changed = Signal(object)    # Selection
    model_changed = Signal(object)        # ModelInfo | None
    busy_changed = Signal(bool)
    error_raised = Signal(str)            # one sentence for a dialog
    force_requested = Signal(int)         # a panel asks to branch on this token id
    step_requested = Signal()
    logit_lens_requested = Signal(int)    # a panel asks for the per-layer logit lens at this position
    model_job_requested = Signal(object)  # job(loaded, cancelled) to run where the model is (worker)
    logit_lens_ready = Signal(object)     # {"position": p, "ids": (L, k), "probs": (L, k)} or (ids, probs)
    candidates_requested = Signal(int)    # a panel asks for the next-token candidates after this position
    candidates_ready = Signal(object)     # {"position": p, "ids": (k,), "probs": (k,), "token": id at p}
    cell_requested = Signal(int, int)     # a click on A[row, col] of the selected head: Show the work derives it
    out_of_date_changed = Signal(object)  # why the trace no longer matches the prompt (one sentence), or None
    experiments_changed = Signal(object)  # tuple of intervention.Experiment: the model runs under those on
    comparison_changed = Signal(object)   # (Intervention, ids, core.experiments.NextTokenComparison) or None
    not_run_changed = Signal(object)      # why the prompt in the editor was not run (one sentence), or None
    context_changed = Signal(object)      # Change: the one path by which a model, a trace, a cancel or an error
                                          # reaches every panel

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._trace: Trace | None = None
        self._tokens = None
        self._selection = Selection()
        self.requested_cell: tuple[int, int] | None = None   # the last cell asked for (a panel built later reads it)
        self._model: ModelInfo | None = None
        self._busy = False
        self._token_display = None
        self._trace_id = 0
        self._model_id = 0
        self._out_of_date: str | None = None
        self._not_run: str | None = None
        self._experiments: tuple[Experiment, ...] = ()
        self.unfit_experiments: tuple[str, ...] = ()    # what the last model switch removed, and why
        self._comparison = None

    # ----- read -----------------------------------------------------------------
    @property
    def trace(self) -> Trace | None:
        return self._trace

    @property
    def tokens(self):
        return self._tokens

    @property
    def selection(self) -> Selection:
        return self._selection

    @property
    def model(self) -> ModelInfo | None:
        return self._model

    @property
    def busy(self) -> bool:
        return self._busy

    @property
    def trace_id(self) -> int:
        """A new number for every trace set (None included): what a panel names as the trace it drew."""
        return self._trace_id

    @property
    def model_id(self) -> int:
        """A new number for every model set (a reload of the same one included): what a panel names as its model."""
        return self._model_id

    @property
    def out_of_date(self) -> str | None:
        return self._out_of_date

    # ----- write ----------------------------------------------------------------
    def set_trace(self, trace: Trace | None) -> None:
        if trace is self._trace:
            return
        reason = TRACE if _same_run(self._trace, trace) else RUN
        self._trace = trace
        self._trace_id += 1
        self._clamp_selection()
        self.trace_changed.emit(trace)
        self._changed(reason)

    def drop_work(self, reason: str) -> None:
        """A cancel (CANCEL) or a failure (ERROR): the panels drop their running jobs and kept results, and
        draw the trace that stays (the model thread dropped the jobs queued behind)."""
        self._changed(reason)

    def _changed(self, reason: str) -> None:
        change = Change(reason, self._model_id, self._trace_id)
        if change.drops_work and self._comparison is not None:      # a comparison of another model or run
            self._comparison = None
            self.comparison_changed.emit(None)
        self.context_changed.emit(change)

    def set_out_of_date(self, reason: str | None) -> None:
        """Mark the trace as no longer the prompt's (the prompt was edited or emptied since it ran), or current."""
        if reason == self._out_of_date:
            return
        self._out_of_date = reason
        self.out_of_date_changed.emit(reason)

    @property
    def not_run(self) -> str | None:
        """Why the prompt was not run on its own (too long to run unasked), while nothing is shown."""
        return self._not_run

    def set_not_run(self, reason: str | None) -> None:
        if reason != self._not_run:
            self._not_run = reason
            self.not_run_changed.emit(reason)

    def set_tokens(self, tokens) -> None:
        if tokens is self._tokens:
            return
        self._tokens = tokens
        self.tokens_changed.emit(tokens)

    def set_model(self, model: ModelInfo | None) -> None:
        """A model was loaded (a reload of the same one too: its jobs were dropped with the old copy)."""
        self._model = model
        self._model_id += 1
        self._selection = Selection()
        self._keep_fitting_experiments(model)
        self.model_changed.emit(model)
        self.selection_changed.emit(self._selection)
        self._changed(MODEL)

    def _keep_fitting_experiments(self, model: ModelInfo | None) -> None:
        """An experiment naming a layer or head the new model lacks ("ablate L23.H4" in a 4-layer model) is
        removed, and `unfit_experiments` says which and why; the others stay."""
        if model is None:
            return
        kept, unfit = [], []
        for experiment in self._experiments:
            try:
                experiment.intervention.check(model.n_layers, model.n_heads)
                kept.append(experiment)
            except ExplorerError as error:
                unfit.append(f"{describe(experiment.intervention)}: {error}")
        self.unfit_experiments = tuple(unfit)
        self.set_experiments(kept)

    @property
    def experiments(self) -> tuple[Experiment, ...]:
        return self._experiments

    def set_experiments(self, experiments) -> None:
        experiments = tuple(experiments)
        if experiments == self._experiments:
            return
        self._experiments = experiments
        self.experiments_changed.emit(experiments)

    def add_experiment(self, intervention: Intervention) -> None:
        """Append an experiment, on (Alt-click on a head, the Experiments dock); ExplorerError if it
        names a layer or head the model does not have."""
        if self._model is not None:
            intervention.check(self._model.n_layers, self._model.n_heads)
        self.set_experiments(self._experiments + (Experiment(intervention),))

    @property
    def comparison(self):
        """The next token before and after the experiments (the Experiments dock asked the model thread):
        (the Intervention, the token ids, NextTokenComparison), or None."""
        return self._comparison

    def set_comparison(self, intervention: Intervention, ids, result) -> None:
        """Hand on the dock's comparison so other panels show it without asking again."""
        self._comparison = None if result is None else (intervention, tuple(int(i) for i in ids), result)
        self.comparison_changed.emit(self._comparison)

    def set_busy(self, busy: bool) -> None:
        if busy == self._busy:
            return
        self._busy = busy
        self.busy_changed.emit(busy)

    def request_cell(self, row: int, col: int) -> None:
        """Ask for A[row, col] of the selected head to be derived (Show the work)."""
        self.requested_cell = (row, col)
        self.cell_requested.emit(row, col)

    def select(self, **changes) -> None:
        """Change some fields of the selection, e.g. `select(token=3)`; no signal if nothing changed."""
        selection = replace(self._selection, **changes)
        selection = self._clamped(selection)
        if selection == self._selection:
            return
        self._selection = selection
        self.selection_changed.emit(selection)

    def set_token_display(self, display) -> None:
        """The loaded tokenizer's `display(id) -> str`, so panels can name vocabulary ids."""
        self._token_display = display

    def set_text_decoder(self, decode) -> None:
        """The loaded tokenizer's `decode(ids) -> str` of plain text, special tokens left out."""
        self._text_decoder = decode

    def decode_text(self, ids) -> str:
        """Token ids as the text they spell ('' while no tokenizer is known)."""
        decode = getattr(self, "_text_decoder", None)
        return decode([int(i) for i in ids]) if decode is not None else ""

    def display_token(self, token_id: int) -> str:
        """A vocabulary id as visible text (`#id` while no tokenizer is known)."""
        return self._token_display(int(token_id)) if self._token_display else f"#{int(token_id)}"

    def report_error(self, message: str) -> None:
        self.error_raised.emit(message)

    # ----- helpers --------------------------------------------------------------
    def _clamp_selection(self) -> None:
        selection = self._clamped(self._selection)
        if selection != self._selection:
            self._selection = selection
            self.selection_changed.emit(selection)

    def _clamped(self, s: Selection) -> Selection:
        model = self._trace.model if self._trace is not None else self._model
        if model is None:
            return s
        layer = min(max(s.layer, 0), model.n_layers - 1)
        head = min(max(s.head, 0), model.n_heads - 1)
        token = s.token
        step = s.step
        source = s.source
        if self._trace is not None:
            n = self._trace.n_tokens
            token = None if token is None or n == 0 else min(max(token, 0), n - 1)
            if step is not None and step >= self._trace.n_steps:
                step = None
            encoder = self._trace.encoder
            n_source = len(encoder.token_ids) if encoder is not None else 0
            source = None if source is None or n_source == 0 else min(max(source, 0), n_source - 1)
        return replace(s, layer=layer, head=head, token=token, step=step, source=source)


def _same_run(before: Trace | None, after: Trace | None) -> bool:
    """Whether `after` is `before` stepped, stepped back or branched: the same model and the same prefill
    record (the decoder keeps it across steps; a new prompt, an experiment or a reload records another)."""
    if before is None or after is None or not before.steps or not after.steps:
        return False
    return before.model == after.model and before.steps[0] is after.steps[0]
