"""The Qt bridge over the session's state: the one place panels read what the app shows, and hear it change.

The state itself is Qt-free (explorer.app.state.session_model.SessionModel); this object emits its
`<noun>_changed` signals, only when a setter changed something. Data flows one way: the worker hands a new
Trace to `set_trace`, the session emits `trace_changed`, and every panel redraws from it. Interaction flows
back through `select(...)` and the named requests of `session.requests` (explorer.app.state.model_requests);
panels never call each other.

A model switch, a new trace, a cancel or an error reaches the panels through one signal,
`context_changed(Change)`: the panels redraw from it, and every change but a step of the same run
also makes them drop their running jobs and kept results (explorer.app.panels.base.Panel).
"""
from __future__ import annotations

from PySide6.QtCore import QObject, Signal

from explorer.app.state.font_coverage import drawable
from explorer.app.state.model_requests import ModelRequests
from explorer.app.state.session_model import (  # noqa: F401 (named from here by the panels)
    CANCEL,
    ERROR,
    MODEL,
    NO_MODEL,
    RUN,
    TRACE,
    Change,
    Selection,
    SessionModel,
)
from explorer.core.intervention import Experiment, Intervention
from explorer.core.trace import ModelInfo, Trace


class Session(QObject):
    """Holds the state and emits `<noun>_changed` only when something changed."""

    trace_changed = Signal(object)        # Trace | None
    trace_arriving = Signal(object)       # the trace set_trace is given, before anything draws it (or the state has
                                          # it): a live recording takes the last step's frame (figures.live_recording)
    tokens_changed = Signal(object)       # explorer.core.tokens.Tokens of the prompt, before any run
    selection_changed = Signal(object)    # Selection
    model_changed = Signal(object)        # ModelInfo | None
    model_opening = Signal(bool)          # a model switch asked (True) and ended (False): its jobs stop at once
    busy_changed = Signal(bool)
    error_raised = Signal(str)            # one sentence for a dialog
    out_of_date_changed = Signal(object)  # why the trace no longer matches the prompt (one sentence), or None
    experiments_changed = Signal(object)  # tuple of intervention.Experiment: the model runs under those on
    comparison_changed = Signal(object)   # (Intervention, ids, core.experiments.NextTokenComparison) or None
    not_run_changed = Signal(object)      # why the prompt in the editor was not run (one sentence), or None
    context_changed = Signal(object)      # Change: the one path by which a model, a trace, a cancel or an error
                                          # reaches every panel

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.state = SessionModel()
        self.requests = ModelRequests(self)     # the asks for model work and their answers: not the state

    # ----- read -----------------------------------------------------------------
    @property
    def trace(self) -> Trace | None:
        return self.state.trace

    @property
    def tokens(self):
        return self.state.tokens

    @property
    def selection(self) -> Selection:
        return self.state.selection

    @property
    def model(self) -> ModelInfo | None:
        return self.state.model

    @property
    def busy(self) -> bool:
        return self.state.busy

    @property
    def trace_id(self) -> int:
        """A new number for every trace set (None included): what a panel names as the trace it drew."""
        return self.state.trace_id

    @property
    def model_id(self) -> int:
        """A new number for every model set (a reload of the same one included): what a panel names as its model."""
        return self.state.model_id

    @property
    def out_of_date(self) -> str | None:
        return self.state.out_of_date

    @property
    def not_run(self) -> str | None:
        """Why the prompt in the editor was not run (too long to run unasked, a cut declined, a session put
        back unrun): what every panel with nothing to show says."""
        return self.state.not_run

    @property
    def experiments(self) -> tuple[Experiment, ...]:
        return self.state.experiments

    @property
    def unfit_experiments(self) -> tuple[str, ...]:
        """What the last model switch removed, and why."""
        return self.state.unfit_experiments

    @property
    def experiments_cleared(self) -> str | None:
        """The sentence saying the last model switch cleared the experiments of the model before, or None."""
        return self.state.experiments_cleared

    @property
    def trace_intervention(self) -> Intervention:
        """What the trace's run was asked under: the experiments on when it began (empty: none)."""
        return self.state.trace_intervention

    @property
    def comparison(self):
        """The next token before and after the experiments (the Experiments dock asked the model thread):
        (the Intervention, the token ids, NextTokenComparison), or None."""
        return self.state.comparison

    # ----- write: the trace and the model -------------------------------------------
    def set_trace(self, trace: Trace | None) -> None:
        if trace is not self.state.trace:              # the trace it holds again is no arrival
            self.trace_arriving.emit(trace)
        reason = self.state.set_trace(trace)
        if reason is None:
            return
        self._clamp_selection(forget_key=reason == RUN)     # a cell clicked in another run's map is not this one's
        self.trace_changed.emit(trace)
        self._changed(reason)

    def drop_work(self, reason: str) -> None:
        """A cancel (CANCEL) or a failure (ERROR): the panels drop their running jobs and kept results, and
        draw the trace that stays (the model thread dropped the jobs queued behind), with no cell clicked."""
        self._clamp_selection(forget_key=True)
        self._changed(reason)

    def _changed(self, reason: str) -> None:
        change, comparison_dropped = self.state.change(reason)
        if comparison_dropped:                               # a comparison of another model or run
            self.comparison_changed.emit(None)
        self.context_changed.emit(change)

    def set_model(self, model: ModelInfo | None) -> None:
        """A model was loaded (a reload of the same one too: its jobs were dropped with the old copy), or none
        is (File ▸ Close Model): every panel then says so, with nothing kept."""
        self.state.set_model(model)
        if model is None or self.state.not_run == NO_MODEL:
            self.set_not_run(NO_MODEL if model is None else None)
        if model is not None:
            self.set_experiments(self.state.own_experiments(model))
        self.model_changed.emit(model)
        self.selection_changed.emit(self.state.selection)
        self._changed(MODEL)

    # ----- write: plain values ----------------------------------------------------------
    def set_out_of_date(self, reason: str | None) -> None:
        """Mark the trace as no longer the prompt's (the prompt was edited or emptied since it ran), or current."""
        if self.state.assign("out_of_date", reason):
            self.out_of_date_changed.emit(reason)

    def set_not_run(self, reason: str | None) -> None:
        if self.state.assign("not_run", reason):
            self.not_run_changed.emit(reason)

    def set_busy(self, busy: bool) -> None:
        if self.state.assign("busy", busy):
            self.busy_changed.emit(busy)

    def set_tokens(self, tokens) -> None:
        if self.state.set_tokens(tokens):
            self.tokens_changed.emit(tokens)

    # ----- write: experiments ---------------------------------------------------------------
    def set_experiments(self, experiments, for_next_model: bool = False) -> None:
        """The experiments, made on the model open, or (`for_next_model`) on the one about to open (a saved
        session's, put back before its model loads): a switch to another model clears them."""
        if self.state.set_experiments(experiments, for_next_model):
            self.experiments_changed.emit(self.state.experiments)

    def add_experiment(self, intervention: Intervention) -> None:
        """Append an experiment, on (Alt-click on a head, the Experiments dock); ExplorerError if it
        names a layer or head the model does not have."""
        self.set_experiments(self.state.with_experiment(intervention))

    def set_comparison(self, intervention: Intervention, ids, result) -> None:
        """Hand on the dock's comparison so other panels show it without asking again."""
        self.state.set_comparison(intervention, ids, result)
        self.comparison_changed.emit(self.state.comparison)

    # ----- write: the selection ----------------------------------------------------------------
    def select(self, **changes) -> None:
        """Change some fields of the selection, e.g. `select(token=3)`; no signal if nothing changed.

        A click on an attention cell is one call, `select(token=row, key=column)`: every panel reads the
        cell from the selection. Then `cell_requested` asks the window to bring Show the work forward (it
        carries nothing a panel reads)."""
        if self.state.select(**changes):
            self.selection_changed.emit(self.state.selection)
        cell = self.state.selection.cell
        if changes.get("key") is not None and cell is not None:
            self.requests.cell_requested.emit(*cell)

    def _clamp_selection(self, forget_key: bool = False) -> None:
        if self.state.clamp_selection(forget_key):
            self.selection_changed.emit(self.state.selection)

    # ----- words ------------------------------------------------------------------------------
    def set_token_display(self, display) -> None:
        """The loaded tokenizer's `display(id) -> str`, so panels can name vocabulary ids."""
        self.state.token_display = display

    def set_token_bytes(self, token_bytes) -> None:
        """The loaded tokenizer's `token_bytes(id) -> bytes`, so a generated token's row names its exact bytes."""
        self.state.token_bytes = token_bytes

    def token_bytes(self, token_id: int) -> bytes | None:
        """The bytes a vocabulary id stands for (b"" for a special token; None while no tokenizer is known)."""
        return self.state.bytes_of(token_id)

    def set_text_decoder(self, decode) -> None:
        """The loaded tokenizer's `decode(ids) -> str` of plain text, special tokens left out."""
        self.state.text_decoder = decode

    def decode_text(self, ids) -> str:
        """Token ids as the text they spell ('' while no tokenizer is known)."""
        return self.state.decode_text(ids)

    def display_token(self, token_id: int) -> str:
        """A vocabulary id as visible text (`#id` while no tokenizer is known), with a script no installed font
        shapes named by its code points (font_coverage.drawable)."""
        return drawable(self.state.display_token(token_id))

    def report_error(self, message: str) -> None:
        self.error_raised.emit(message)
