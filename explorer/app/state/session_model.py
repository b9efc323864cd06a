"""What the app shows, without Qt: the model, the trace, the live tokens, the selection and the experiments.

A plain object that tests (and a script) can drive without a QApplication. Each setter says whether it
changed anything, and does nothing when nothing did (glue's property setters skip equal values), so the
Qt bridge (explorer.app.state.session.Session) emits `<noun>_changed` only for a real change.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

from explorer.core.errors import ExplorerError
from explorer.core.intervention import NONE, Experiment, Intervention, active, describe
from explorer.core.trace import ModelInfo, Trace

# Why the panels hear a Change; all but TRACE drop the panels' running jobs and kept results.
MODEL, RUN, TRACE, CANCEL, ERROR = "model", "run", "trace", "cancel", "error"
# What every panel says while no model is open (File ▸ Close Model): the session's not_run reason.
NO_MODEL = "No model is open: choose one in the Model box or File ▸ Open."


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
    """What the person is looking at. `step=None` means the latest step; `token=None` means none.

    `key` is the key clicked in the row of `token`: the cell A[token, key] of the selected head's map (a
    source token in a cross-attention map), which Show the work derives (None: the row's largest weight).
    It belongs to its row of its map, so another token or another attention drops it.
    """

    token: int | None = None
    layer: int = 0
    head: int = 0
    step: int | None = None
    attention: str = "self"          # "self" | "cross" | "encoder"
    source: int | None = None        # an encoder-decoder's source token (`token` is a target token)
    key: int | None = None           # the key clicked in row `token` (A[token, key]), or None

    @property
    def cell(self) -> tuple[int, int] | None:
        """(row, column) of the attention cell clicked, or None."""
        return None if self.token is None or self.key is None else (self.token, self.key)


@dataclass
class SessionModel:
    """The state behind the session. Setters return True when they changed something."""

    trace: Trace | None = None
    tokens: object = None                         # explorer.core.tokens.Tokens of the prompt, before any run
    selection: Selection = field(default_factory=Selection)
    model: ModelInfo | None = None
    busy: bool = False
    trace_id: int = 0                             # a new number for every trace set (None included)
    model_id: int = 0                             # a new number for every model set (a reload included)
    out_of_date: str | None = None                # why the trace no longer matches the prompt, or None
    not_run: str | None = None                    # why the prompt was not run on its own, or None
    experiments: tuple[Experiment, ...] = ()
    unfit_experiments: tuple[str, ...] = ()       # what the last model switch removed, and why
    experiments_model: str | None = None          # the model the experiments were made on (None: the next opened)
    experiments_cleared: str | None = None        # the sentence saying the last switch cleared them, or None
    trace_intervention: Intervention = NONE       # what the trace's run was asked under (the experiments then on)
    comparison: tuple | None = None               # (Intervention, ids, NextTokenComparison) or None
    token_display: object = None                  # the tokenizer's display(id) -> str
    token_bytes: object = None                    # the tokenizer's token_bytes(id) -> bytes (b"" for a special token)
    text_decoder: object = None                   # the tokenizer's decode(ids) -> str, special tokens left out

    # ----- the trace and the model ---------------------------------------------------
    def set_trace(self, trace: Trace | None) -> str | None:
        """Take a new trace; the reason the panels hear (TRACE: a step of the same run, else RUN), or None
        when it is the trace held."""
        if trace is self.trace:
            return None
        reason = TRACE if same_run(self.trace, trace) else RUN
        self.trace = trace
        self.trace_id += 1
        if reason == RUN:       # a run of its own is recorded under the experiments on (a step keeps its run's)
            self.trace_intervention = active(self.experiments) if trace is not None else NONE
        return reason

    def set_model(self, model: ModelInfo | None) -> None:
        """A model was loaded (a reload of the same one too): a new model id and a fresh selection."""
        self.model = model
        self.model_id += 1
        self.selection = Selection()

    def change(self, reason: str) -> tuple[Change, bool]:
        """The Change the panels hear, and whether the kept comparison was dropped with it (it was
        another model's or run's)."""
        change = Change(reason, self.model_id, self.trace_id)
        dropped = change.drops_work and self.comparison is not None
        if dropped:
            self.comparison = None
        return change, dropped

    # ----- plain values ----------------------------------------------------------------
    def assign(self, name: str, value) -> bool:
        """Set one plain field (`out_of_date`, `not_run`, `busy`); False when it already held `value`."""
        if getattr(self, name) == value:
            return False
        setattr(self, name, value)
        return True

    def set_tokens(self, tokens) -> bool:
        if tokens is self.tokens:
            return False
        self.tokens = tokens
        return True

    # ----- experiments -------------------------------------------------------------------
    def set_experiments(self, experiments, for_next_model: bool = False) -> bool:
        """The experiments, made on the model open (or, `for_next_model`, on the one about to open: a session
        file's, put back before its model loads); False when nothing changed."""
        experiments = tuple(experiments)
        owner = None if for_next_model or self.model is None else self.model.name
        if experiments or for_next_model:
            self.experiments_model, self.experiments_cleared = owner, None
        if experiments == self.experiments:
            return False
        self.experiments = experiments
        return True

    def own_experiments(self, model: ModelInfo) -> tuple[Experiment, ...]:
        """The experiments `model` runs under once it opens: none where they were made on another model (an
        ablation chosen for one model changed the next one's outputs unsaid, drive 21 m19), and
        `experiments_cleared` says so; else those that fit it (see fitting_experiments)."""
        made_on, self.experiments_cleared = self.experiments_model, None
        self.unfit_experiments = ()
        if self.experiments and made_on not in (None, model.name):
            self.experiments_cleared = (f"The experiments on {made_on} were cleared: they were made for that "
                                        f"model, not {model.name}.")
            return ()
        self.experiments_model = model.name
        return self.fitting_experiments(model)

    def fitting_experiments(self, model: ModelInfo) -> tuple[Experiment, ...]:
        """The experiments that fit `model`; one naming a layer or head it lacks ("ablate L23.H4" in a
        4-layer model) is left out, and `unfit_experiments` says which and why."""
        kept, unfit = [], []
        for experiment in self.experiments:
            try:
                experiment.intervention.check(model.n_layers, model.n_heads)
                kept.append(experiment)
            except ExplorerError as error:
                unfit.append(f"{describe(experiment.intervention)}: {error}")
        self.unfit_experiments = tuple(unfit)
        return tuple(kept)

    def with_experiment(self, intervention: Intervention) -> tuple[Experiment, ...]:
        """The experiments with `intervention` appended, on; one listed already is switched on where it
        stands instead (an Alt-click twice on a head listed "ablate L1.H2" twice, each run under the same
        ablation). ExplorerError if it names a layer or head the model does not have."""
        if self.model is not None:
            intervention.check(self.model.n_layers, self.model.n_heads)
        listed = [experiment.intervention for experiment in self.experiments]
        if intervention not in listed:
            return self.experiments + (Experiment(intervention),)
        row = listed.index(intervention)
        return self.experiments[:row] + (replace(self.experiments[row], on=True),) + self.experiments[row + 1:]

    def set_comparison(self, intervention: Intervention, ids, result) -> None:
        self.comparison = None if result is None else (intervention, tuple(int(i) for i in ids), result)

    # ----- the selection -------------------------------------------------------------------
    def select(self, **changes) -> bool:
        """Change some fields of the selection, e.g. `select(token=3)`, clamped to the trace; another token
        without a key drops the key clicked in the old row. False when nothing changed."""
        selection = replace(self.selection, **changes)
        if "key" not in changes and (selection.token, selection.attention) != (self.selection.token,
                                                                         self.selection.attention):
            selection = replace(selection, key=None)
        return self._take(self.clamped(selection))

    def clamp_selection(self, forget_key: bool = False) -> bool:
        """Clamp the selection to the trace held (and drop the key clicked, for another run's trace)."""
        selection = replace(self.selection, key=None) if forget_key else self.selection
        return self._take(self.clamped(selection))

    def _take(self, selection: Selection) -> bool:
        if selection == self.selection:
            return False
        self.selection = selection
        return True

    def clamped(self, s: Selection) -> Selection:
        """`s` within the model's layers and heads and the trace's tokens, steps and source tokens."""
        model = self.trace.model if self.trace is not None else self.model
        if model is None:
            return s
        s = replace(s, layer=min(max(s.layer, 0), model.n_layers - 1), head=min(max(s.head, 0), model.n_heads - 1))
        if self.trace is None:
            return s
        n = self.trace.n_tokens
        token = None if s.token is None or n == 0 else min(max(s.token, 0), n - 1)
        step = None if s.step is not None and s.step >= self.trace.n_steps else s.step
        encoder = self.trace.encoder
        n_source = len(encoder.token_ids) if encoder is not None else 0
        source = None if s.source is None or n_source == 0 else min(max(s.source, 0), n_source - 1)
        key = s.key if token == s.token else None
        return replace(s, token=token, step=step, source=source, key=key)

    # ----- words ---------------------------------------------------------------------------------
    def decode_text(self, ids) -> str:
        """Token ids as the text they spell ('' while no tokenizer is known)."""
        return self.text_decoder([int(i) for i in ids]) if self.text_decoder is not None else ""

    def display_token(self, token_id: int) -> str:
        """A vocabulary id as visible text (`#id` while no tokenizer is known)."""
        return self.token_display(int(token_id)) if self.token_display else f"#{int(token_id)}"

    def bytes_of(self, token_id: int) -> bytes | None:
        """The bytes a vocabulary id stands for (b"" for a special token; None while no tokenizer is known)."""
        return self.token_bytes(int(token_id)) if self.token_bytes else None


def same_run(before: Trace | None, after: Trace | None) -> bool:
    """Whether `after` is `before` stepped, stepped back or branched: the same model and the same prefill
    record (the decoder keeps it across steps; a new prompt, an experiment or a reload records another)."""
    if before is None or after is None or not before.steps or not after.steps:
        return False
    return before.model == after.model and before.steps[0] is after.steps[0]
