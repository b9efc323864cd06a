"""Experiments: change a term of the attention algebra and watch the next token move.

    A = Z^-1 f_kappa(S),  O_h = A_h V_h  ->  an ablated head's O_h is 0 (or its prompt mean),
    a swapped kernel is linear f(S) = S, relu max(0, S) or exp(S / tau); a hidden token's keys are masked

The dock lists the experiments (explorer.core.intervention values), each with its own on/off box;
the model thread redoes the trace under those that are on and decodes on under them (a branch);
Alt-click a head in the attention grid to add its ablation (the Activation patching tab: patching_view.py).
Below, the next token after the trace's last position before and after every experiment that is on
(with none on, the model is not asked): the top-k side by side, the KL divergence KL(before || after)
and the change of the chosen token's logit. The comparison runs on the model thread
(explorer.core.experiments.compare_next_token), never here.
"""
from __future__ import annotations

import json
from dataclasses import replace

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QDoubleSpinBox,
    QGridLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QSpinBox,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from explorer.app.panels.base import Panel, WrappedText, decoder_model_unavailable
from explorer.app.thread.requests import CompareNextTokenJob
from explorer.app.widgets.adaptive import orient
from explorer.app.widgets.asking import Asker
from explorer.app.widgets.patching_view import PatchingView
from explorer.core.errors import ExplorerError
from explorer.core.intervention import (
    Experiment,
    HeadAblation,
    HideToken,
    Intervention,
    Kernel,
    KernelChoice,
    active,
    describe,
)
from explorer.views.words import plural

TOP_K = 8
AUTO_COMPARE_TOKENS = 1024     # above: a step alone does not run the comparison again
IDLE_TEXT = "Turn an experiment on to compare the next token before and after it."
NONE_LISTED = ("No experiments yet: add one with an Add button (ablate a head, change the kernel, hide a token), "
               "or Alt-click a head in the attention grid.")
NO_MAP = "No patching map yet: press Run map."


def parse_layers(text: str) -> tuple[int, ...] | None:
    """"all" (or nothing) -> None; "1, 3" -> (1, 3)."""
    text = text.strip().lower()
    if text in ("", "all"):
        return None
    try:
        return tuple(int(part) for part in text.replace(" ", "").split(","))
    except ValueError:
        raise ExplorerError(f"layers {text!r} are not 'all' or a list like 1,3") from None


class ExperimentsPanel(Panel):
    title = "Experiments"
    object_name = "experiments"
    stop_holds = True           # a Stop cancels the before/after until Compute (base.Panel.stop_work)

    def __init__(self, session, parent=None) -> None:
        super().__init__(session, parent)
        self.executor = None                 # None: the session's model thread (tests give their own)
        self.list = QListWidget()
        self.list.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.list.itemChanged.connect(self._on_item_changed)
        self.list.setToolTip("tick an experiment to apply it; Alt-click a head in the attention grid to ablate it")
        self.splitter = QSplitter(Qt.Orientation.Vertical)          # side by side in a wide dock (resizeEvent)
        editing = QWidget()
        column = QVBoxLayout(editing)
        column.setContentsMargins(0, 0, 0, 0)
        column.addWidget(self.list, 1)
        column.addWidget(self._adders())
        comparing = QWidget()
        column = QVBoxLayout(comparing)
        column.setContentsMargins(0, 0, 0, 0)
        self.summary = WrappedText()
        column.addWidget(self.summary)
        self.table = QTableWidget(0, 4)
        self.table.setHorizontalHeaderLabels(["before", "p", "after", "p"])
        self.table.verticalHeader().setVisible(False)
        self.table.verticalHeader().setDefaultSectionSize(self.fontMetrics().height() + 6)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        column.addWidget(self.table, 1)
        self.compare_button = QPushButton("Compare")
        self.compare_button.setToolTip("run the before/after again at the trace's last position")
        self.compare_button.setEnabled(False)
        self.compare_button.clicked.connect(lambda: self._ask(asked=True))
        column.addWidget(self.compare_button)
        self.splitter.addWidget(editing)
        self.splitter.addWidget(comparing)
        self.tabs = QTabWidget()
        self.tabs.addTab(self.splitter, "Interventions")
        self.patching = PatchingView(self)
        self.tabs.addTab(self.patching, "Activation patching")
        self.body.addWidget(self.tabs, 1)
        self._said = " "                    # the Interventions tab's line under the panel (a count, a comparison)
        self.tabs.currentChanged.connect(lambda _index: self._say(self._said))
        for news in (self.patching.call.finished, self.patching.call.failed, self.patching.run_button.clicked):
            news.connect(lambda *_: self._say(self._said))
        self.asker = Asker(self, self._on_answer, self.error_line.show_error)
        self.result = None
        self.compared = None                # (model, intervention, ids) of the comparison asked or shown
        self.set_formula("A = Z⁻¹ f_κ(S),  O_h = A_h V_h  (ablate: O_h ← 0;  f_κ: exp, linear, relu)")
        session.experiments_changed.connect(lambda _experiments: self._show_list())
        self._show_list()

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        orient(self.splitter, self.width(), self.height())

    # ----- the controls -------------------------------------------------------------
    def _adders(self) -> QWidget:
        box = QWidget()
        grid = QGridLayout(box)
        grid.setContentsMargins(0, 0, 0, 0)
        self.layer_box, self.head_box = QSpinBox(), QSpinBox()
        self.mode_box = QComboBox()
        self.mode_box.addItems(["zero", "mean"])
        self._row(grid, 0, "ablate head", [QLabel("L"), self.layer_box, QLabel("H"), self.head_box, self.mode_box],
                  self._add_ablation)
        self.kernel_box = QComboBox()
        self.kernel_box.addItems(["linear", "relu", "exp"])
        self.tau_box = QDoubleSpinBox()
        self.tau_box.setRange(0.05, 100.0)
        self.tau_box.setValue(1.0)
        self.tau_box.setPrefix("τ ")
        self.tau_box.setToolTip("the temperature of exp(S / τ); the linear and relu kernels have none")
        self.tau_box.setEnabled(False)
        self.kernel_box.currentTextChanged.connect(lambda name: self.tau_box.setEnabled(name == "exp"))
        self.kernel_layers = QLineEdit("all")
        self.kernel_layers.setToolTip("the layers the kernel applies to: all, or a list like 1,3")
        self._row(grid, 1, "kernel", [self.kernel_box, self.tau_box, QLabel("layers"), self.kernel_layers],
                  self._add_kernel)
        self.token_box, self.first_box, self.last_box = QSpinBox(), QSpinBox(), QSpinBox()
        self._row(grid, 2, "hide token", [self.token_box, QLabel("from L"), self.first_box, QLabel("to L"),
                                          self.last_box], self._add_hidden)
        remove = QPushButton("Remove")
        remove.clicked.connect(self.remove_selected)
        grid.addWidget(remove, 3, 0)
        return box

    def _row(self, grid: QGridLayout, row: int, name: str, widgets, on_add) -> None:
        grid.addWidget(QLabel(name), row, 0)
        line = QHBoxLayout()
        for widget in widgets:
            line.addWidget(widget)
        grid.addLayout(line, row, 1)
        add = QPushButton("Add")
        add.clicked.connect(lambda: self._adding(on_add))
        grid.addWidget(add, row, 2)

    def _adding(self, build) -> None:
        try:
            self.add(build())
        except ExplorerError as error:
            self.error_line.show_error(str(error))

    def _add_ablation(self) -> Intervention:
        return Intervention(ablations=(HeadAblation(self.layer_box.value(), self.head_box.value(),
                                                    self.mode_box.currentText()),))

    def _add_kernel(self) -> Intervention:
        name = self.kernel_box.currentText()
        tau = self.tau_box.value() if name == "exp" else 1.0
        return Intervention(kernels=(KernelChoice(Kernel(name, tau), parse_layers(self.kernel_layers.text())),))

    def _add_hidden(self) -> Intervention:
        first, last = self.first_box.value(), self.last_box.value()
        return Intervention(edits=(HideToken(self.token_box.value(), min(first, last), max(first, last)),))

    # ----- the list -----------------------------------------------------------------
    @property
    def experiments(self) -> tuple:
        """The session's list (intervention.Experiment): the session file saves it, the model runs under it."""
        return self.session.experiments

    def add(self, intervention: Intervention) -> None:
        """Add `intervention` to the list; one already listed is turned on and selected instead of listed
        twice (the same ablation added on two models read "ablate L3.H1" twice, "3 of 3 experiments on")."""
        listed = [experiment.intervention for experiment in self.experiments]
        if intervention not in listed:
            self.session.add_experiment(intervention)
            return
        row = listed.index(intervention)
        if not self.experiments[row].on:
            self.session.set_experiments(self.experiments[:row] + (replace(self.experiments[row], on=True),) +
                                         self.experiments[row + 1:])
        self.list.setCurrentRow(row)

    def remove_selected(self) -> None:
        row = self.list.currentRow()
        if 0 <= row < len(self.experiments):
            self.session.set_experiments(self.experiments[:row] + self.experiments[row + 1:])

    def set_experiments(self, experiments) -> None:
        self.session.set_experiments(experiments)

    def _show_list(self) -> None:
        with self.updating():
            self.list.clear()
            for experiment in self.experiments:
                item = QListWidgetItem(describe(experiment.intervention))
                item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
                item.setCheckState(Qt.CheckState.Checked if experiment.on else Qt.CheckState.Unchecked)
                self.list.addItem(item)
        self._ask()

    def _on_item_changed(self, item: QListWidgetItem) -> None:
        if self._updating:
            return
        row = self.list.row(item)
        on = item.checkState() == Qt.CheckState.Checked
        experiments = list(self.experiments)
        experiments[row] = Experiment(experiments[row].intervention, on)
        self.session.set_experiments(experiments)

    # ----- the comparison ---------------------------------------------------------
    def forget(self) -> None:
        """No comparison of another model or run stays beside this one."""
        self.result, self.compared = None, None
        self.table.setRowCount(0)
        self.summary.set_plain(self._unfit_text())
        self._said = " "
        self._fit_patching()

    def _fit_patching(self) -> None:
        """The patching tab told the model now open: a map of another model goes, an encoder's Run waits."""
        self.patching.forget(self.session.model_id,
                             decoder_model_unavailable(self.session.model, "Activation patching"))

    def _unfit_text(self) -> str:
        unfit = self.session.unfit_experiments
        removed = ("Removed, as this model lacks what they name: " + "; ".join(unfit) + ".") if unfit else ""
        return " ".join(filter(None, (self.session.experiments_cleared, removed)))

    def redraw(self) -> None:
        self._fit_patching()
        if self.trace is None:
            return
        model = self.trace.model
        for box, top in ((self.layer_box, model.n_layers), (self.first_box, model.n_layers),
                         (self.last_box, model.n_layers), (self.head_box, model.n_heads),
                         (self.token_box, self.trace.n_tokens)):
            box.setRange(0, max(0, top - 1))
        self.last_box.setValue(model.n_layers - 1)
        self._ask()

    def _ask(self, asked: bool = False) -> None:
        """Compare the next token after the trace's last position, before and under the experiments on. At a
        long prompt each comparison runs the prompt twice, so a step alone does not ask again: the one shown
        says which position it compared, and Compare (or another experiment) brings it up to date."""
        trace = self.trace
        self.compare_button.setEnabled(False)
        if trace is None or not trace.steps:
            self._say(" ")
            return
        if trace.model.is_encoder_only or trace.model.is_encoder_decoder:
            # after what a switch cleared: the encoder's reason had replaced that sentence (drive 22, MiniLM)
            self.summary.set_plain(" ".join(filter(None, (
                self._unfit_text(), f"The before/after compares next-token predictions; {trace.model.name} is "
                "not a decoder-only model. The experiments still apply to its attention."))))
            return
        if not any(experiment.on for experiment in self.experiments):
            self._show_idle()               # nothing to compare: a comparison is a full pass of the model
            return
        intervention = active(self.experiments)
        ids = tuple(int(i) for i in trace.token_ids)
        setting = (trace.model.name, json.dumps(intervention.to_json(), sort_keys=True))
        key = setting + (ids,)
        if trace.n_tokens > AUTO_COMPARE_TOKENS and not asked and self.compared is not None \
                and self.compared[:2] == setting and self.compared != key:
            self._show_behind(len(self.compared[2]) - 1, trace.n_tokens - 1)
            return
        self.compared = key
        if self.asker.ask(key, CompareNextTokenJob(ids, intervention, TOP_K)):     # run by core_api, model thread
            self._say(f"running the next token after position {len(ids) - 1}, before and after…")
        stopped = key == self.asker.stopped and self.result is None
        self.show_stopped(f"the next token after position {len(ids) - 1}, before and after" if stopped else None)

    def _show_idle(self) -> None:
        """No experiment on: the model is not asked, and no comparison of one turned off stays."""
        self.asker.drop()
        self.result, self.compared = None, None
        self.table.setRowCount(0)
        listed = len(self.experiments)
        self.summary.set_plain(" ".join(filter(None, (self._unfit_text(), IDLE_TEXT if listed else NONE_LISTED))))
        self._say(f"0 of {plural(listed, 'experiment')} on" if listed else " ")     # nothing to count: no count

    def _show_behind(self, compared: int, last: int) -> None:
        self.compare_button.setEnabled(True)
        self._say(f"compared after position {compared}; the trace has gone on to position {last}: "
                  "press Compare to update")

    def _on_answer(self, key, result) -> None:
        self.result = result
        self.session.set_comparison(active(self.experiments), key[2], result)   # the Next-token panel shows it too
        name = self.session.display_token
        self.table.setRowCount(len(result.before_ids))
        for row, cells in enumerate(zip(result.before_ids, result.before_probs, result.after_ids, result.after_probs)):
            for col, value in enumerate(cells):
                text = f"{float(value):.3f}" if col % 2 else f"'{name(int(value))}'"
                self.table.setItem(row, col, QTableWidgetItem(text))
        position, token = len(key[2]) - 1, name(result.token_id)
        self.summary.set_plain(
            f"The next token after position {position} '{name(key[2][-1])}'. KL(before ‖ after) = {result.kl:.4f} "
            f"nats.  '{token}': logit {result.logit_before:.3f} → {result.logit_after:.3f} "
            f"(Δ {result.delta_logit:+.3f}), p {result.prob_before:.3f} → {result.prob_after:.3f}.")
        on = sum(e.on for e in self.experiments)
        self._say(f"{on} of {plural(len(self.experiments), 'experiment')} on")

    def _say(self, text: str) -> None:
        """The line under the panel speaks of the Interventions tab: it is shown while that tab is up, and
        kept for when it comes back; under the patching tab it says whether a map was run."""
        self._said = text
        self.readout.setText(text if self.tabs.currentIndex() == 0 else self._patching_state())

    def _patching_state(self) -> str:
        """The patching tab's explicit empty state: no map run yet (running, failed or unfit, it says so itself)."""
        view = self.patching
        quiet = view.call.running or view.unfit or view.failure is not None
        return NO_MAP if view.result is None and not quiet else " "
