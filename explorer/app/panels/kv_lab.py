"""KV lab: what MHA, GQA, MQA and MLA would cache for this model, and what converting it costs.

The table and the plot come from the model's dimensions alone (DeepSeek-V2, Table 1:
MHA 2·n_h·d_h, GQA 2·n_g·d_h, MQA 2·d_h, MLA d_c + d_R per token per layer), from the
loaded model or from a config.json of a model too big to load. The what-if runner
converts the loaded model (fewer K/V heads by mean-pooling, more by replicating them, MLA
by truncated SVD, see explorer.core.convert), decodes the same prompt with both, and shows per
step the KL divergence, top-1 agreement, how the cache changes and both attention maps of the
selected head.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QTabWidget

from explorer.app.figures import export_dialogs
from explorer.app.panels.base import Panel
from explorer.app.state.session import Selection
from explorer.app.widgets.kv_lab_rows import VariantsTab
from explorer.app.widgets.kv_plot import save_bytes_plot
from explorer.app.widgets.model_call import Executor, thread_executor
from explorer.app.widgets.variants_compare import VariantsWindow
from explorer.app.widgets.what_if_runner import WhatIfRunner, steps_room, what_if_job
from explorer.app.widgets.what_if_view import WhatIfView, steps_csv
from explorer.core import conversion_targets as targets
from explorer.core import kv_variants as kv
from explorer.core.errors import ExplorerError
from explorer.core.loaders.config_file import read_config
from explorer.drawing import export

model_backend = thread_executor        # a test's or a script's own loaded model, on a thread of its own


class KVLabPanel(Panel):
    title = "KV lab"
    object_name = "kv_lab"

    def __init__(self, session, executor: Executor | None = None, parent=None) -> None:
        super().__init__(session, parent)
        self.shape: kv.CacheShape | None = None
        self.source_name = ""
        self.from_config = False
        self.result = None
        self.executor = executor           # None: the worker's model, through the session
        self.what_if_job = what_if_job     # (variant, steps, prompt ids, followed ids) -> a model job
        self.variants_window = None
        self.opening = False               # a model switch was asked and has not ended (on_model_opening)
        self.set_formula("bytes/token = Σ_l width_l · bytes(dtype):  MHA 2·N_Q·d_h,  GQA 2·N_KV·d_h,  "
                         "MQA 2·d_h,  MLA d_c + d_R")
        self.tabs = QTabWidget()                   # a bottom dock is short: one idea per tab
        self.tabs.addTab(self._variants_tab(), "Cache per variant")
        self.tabs.addTab(self._what_if_section(), "What-if conversion")
        self.tabs.setTabToolTip(0, "The bytes MHA, GQA, MQA and MLA would cache for this model, per token and in all.")
        self.tabs.setTabToolTip(1, "The model converted to another variant, its next-token predictions beside the "
                                   "original's.")
        self.body.addWidget(self.tabs, 1)
        session.model_changed.connect(self._on_model_changed)
        session.model_opening.connect(self.on_model_opening)
        session.busy_changed.connect(self.runner.on_busy_changed)
        self._update_run_buttons()

    # ----- layout ---------------------------------------------------------------------------
    def _variants_tab(self) -> VariantsTab:
        tab = self.variants_tab = VariantsTab()
        section = tab.controls
        tab.plot_built.connect(lambda plot: [self.add_to_plot_menu(item) for item in plot.plots.values()])
        # its widgets stay reachable as the panel's own: scripts and tests read them there
        (self.source_label, self.open_button, self.bundled_box, self.model_button, self.compare_button,
         self.dtype_box, self.tokens_box, self.ranks_edit, self.rows_hint, self.table) = (
            section.source_label, section.open_button, section.bundled_box, section.model_button,
            section.compare_button, section.dtype_box, section.tokens_box, section.ranks_edit, section.rows_hint,
            section.table)
        section.config_chosen.connect(self.open_config)
        self.model_button.clicked.connect(self.use_loaded_model)
        self.compare_button.clicked.connect(lambda: self.open_variants_window())
        self.dtype_box.currentTextChanged.connect(lambda _: self.update_table(replot=False))
        self.tokens_box.valueChanged.connect(lambda _: self.update_table(replot=False))
        self.ranks_edit.editingFinished.connect(self.update_table)
        return tab

    def _what_if_section(self) -> WhatIfView:
        view = self.what_if = WhatIfView()
        self.runner = WhatIfRunner(view, self.session.requests.model_job_requested.emit, self)
        self.runner.finished.connect(self._on_result_changed)
        self.runner.failed.connect(lambda _: self._update_run_buttons())
        view.run_button.clicked.connect(lambda: self.run_conversion())
        # the tab's widgets stay reachable as the panel's own: scripts and tests read them there
        (self.variant_box, self.steps_box, self.run_button, self.cancel_button, self.progress, self.run_summary,
         self.targets_note, self.error_line, self.steps_table) = (
            view.variant_box, view.steps_box, view.run_button, view.cancel_button, view.progress, view.run_summary,
            view.targets_note, view.error_line, view.steps_table)
        return view

    @property
    def plot(self):
        return self.variants_tab.plot               # built on the turn after the panel (VariantsTab.plot)

    @property
    def original_map(self):
        return self.what_if.original_map            # built with the first result (WhatIfView.heatmaps)

    @property
    def converted_map(self):
        return self.what_if.converted_map

    # ----- the comparison table -------------------------------------------------------------
    def set_shape(self, shape: kv.CacheShape, name: str, from_config: bool = False) -> None:
        """Show the variants of `shape` (a loaded model's, or a config-only model's)."""
        self.shape, self.source_name, self.from_config = shape, name, from_config
        self.variants_tab.controls.show_source(f"{name}{' (config only)' if from_config else ''}")
        with self.updating():
            self.tokens_box.setValue(min(shape.max_positions, self.tokens_box.maximum()))
        self.update_table()
        self._update_run_buttons()

    def open_config(self, path: str) -> bool:
        """Compare the caches of a model from its config.json (or GGUF header) alone."""
        try:
            config, name = read_config(path)
            self.set_shape(kv.cache_shape(config, source=str(path)), name, from_config=True)
        except ExplorerError as error:
            self.session.report_error(str(error))
            return False
        return True

    def use_loaded_model(self) -> None:
        if self.session.model is not None:
            self.set_shape(kv.shape_from_info(self.session.model), self.session.model.name)

    def ranks(self) -> list[int] | None:
        return self.variants_tab.controls.ranks()

    def rows(self) -> list[kv.VariantRow]:
        if self.shape is None:
            return []
        return kv.compare(self.shape, self.tokens_box.value(), self.dtype_box.currentText(), self.ranks())

    def update_table(self, replot: bool = True) -> None:
        rows = self.rows()
        self.variants_tab.show_rows(rows, self.shape, self.source_name, replot)
        self._fill_variant_box(rows)

    def _fill_variant_box(self, rows: list[kv.VariantRow]) -> None:
        current = self.variant_box.currentText()
        with self.updating():
            self.variant_box.clear()
            model = self.session.model
            if model is not None and not self.from_config:       # only what the conversion can do
                self.variant_box.addItems(targets.what_if_targets(model, rows))
            if current:
                self.variant_box.setCurrentText(current)
        self._update_run_buttons()

    # ----- the what-if runner -------------------------------------------------------------------
    def set_executor(self, executor: Executor | None) -> None:
        """Where conversions run: None for the worker's model (the app), or e.g. `model_backend(loaded)`."""
        self.executor = executor
        self._update_run_buttons()

    def can_convert(self) -> bool:
        has_model = self.executor is not None or self.session.model is not None
        trace = self.trace
        ready = has_model and not self.from_config and trace is not None and bool(trace.steps)
        offered = self.variant_box.count() > 0 or self.executor is not None     # a test's executor names its own
        return ready and offered and not self.runner.running and not self.opening and not self._encoder_only()

    def _encoder_only(self) -> bool:
        model = self.session.model
        return model is not None and model.is_encoder_only and not self.from_config

    def run_conversion(self, variant: str | None = None, steps: int | None = None) -> bool:
        """Convert the loaded model to `variant` and compare `steps` next-token predictions."""
        if not self.can_convert():
            return False
        variant = variant or self.variant_box.currentText()
        steps = steps or self.steps_box.value()
        over = steps - steps_room(self.trace)
        if over > 0:                        # refused before it runs: the core would stop at the context's end
            self.what_if.show_no_result(variant, f"needs {over:,} more token{'s' if over > 1 else ''} than the "
                                                 f"context of {self.trace.model.max_positions:,} holds: fewer "
                                                 "steps or a shorter prompt.")
            return False
        prompt = np.asarray(self.trace.steps[0].token_ids, dtype=np.int64).copy()
        # the session's own tokens (a branch, sampled steps), not the original's greedy path from the prompt
        followed = tuple(int(step.chosen_id) for step in self.trace.steps)
        self.result = None                  # the target before's result goes: nothing of it stays up as current
        self.runner.convert(variant, steps, self.what_if_job(variant, steps, prompt, followed), self.executor)
        self._update_run_buttons()
        return True

    def _update_run_buttons(self) -> None:
        running = self.runner.running
        self.run_button.setEnabled(self.can_convert())
        why_off = "another model is being opened" if self.opening else "load a model and run a prompt first"
        self.run_button.setToolTip("" if self.can_convert() or running else why_off)
        self.cancel_button.setEnabled(running and not self.runner.cancelling)   # one press: stopping
        encoder = self._encoder_only()          # a conversion compares next-token predictions: an encoder has none
        # held while a conversion runs: another target chosen then stood over "Converting to <the first>…"
        self.variant_box.setEnabled(not encoder and not running)
        self.steps_box.setEnabled(not encoder and not running)
        self._limit_steps()
        if encoder:
            self.variant_box.clear()
        model = self.session.model
        why = ""
        if not running and model is not None and not self.from_config:
            why = targets.why_no_mla(model, self.rows()) if self.variant_box.count() else targets.why_no_targets(model)
        self.what_if.say_why_no_targets(why)

    def _limit_steps(self) -> None:
        """The steps box holds at most the predictions the context leaves after the session's prompt."""
        if self.trace is None or not self.trace.steps or self.runner.running:
            return
        room = steps_room(self.trace)
        self.steps_box.setMaximum(max(1, room))
        self.steps_box.setToolTip(f"At most {room:,}: the context of {self.trace.model.max_positions:,} positions "
                                  f"holds the prompt's {len(self.trace.steps[0].token_ids):,} tokens and one more "
                                  "per step after the first prediction.")

    def _on_result_changed(self, result) -> None:
        self.result = result
        self.what_if.show_result(result, self.session.display_token)
        self._update_run_buttons()
        self.show_selection(self.session.selection)

    # ----- Panel ---------------------------------------------------------------------------------
    needs_trace = False                   # the variants are the model's; only the what-if runner needs a trace

    def redraw(self) -> None:
        if self.shape is None and self.session.model is not None:
            self.use_loaded_model()
        self._update_run_buttons()

    def show_selection(self, selection: Selection) -> None:
        if self.result is not None:
            self.what_if.show_maps(self.result, selection.layer, selection.head)

    def on_model_opening(self, opening: bool) -> None:
        """A model switch was asked (the session's model_opening): the conversion of the model going is
        cancelled at once and says so; it would otherwise read "Converting… 1 %" until the model thread's next
        check, its Cancel live, while the Model box already named the model coming."""
        self.opening = opening               # Run waits for the model coming: a job asked now would run on it
        if opening:
            self.runner.cancel_because("another model is being opened")
        self._update_run_buttons()

    def _on_model_changed(self, info) -> None:
        self.opening = False
        self.runner.abandon("The model changed; the conversion was cancelled.")
        self.result = None
        self.what_if.clear()                 # no what-if result of the model before stays up
        if info is not None and not self.from_config:
            self.set_shape(kv.shape_from_info(info), info.name)

    # ----- export -----------------------------------------------------------------------------------
    def save_table_csv(self, path) -> Path:
        text = kv.to_csv(self.rows())
        return export.atomic_write(Path(path), lambda temporary: Path(temporary).write_text(text, encoding="utf-8"))

    def save_steps_csv(self, path) -> Path:
        text = steps_csv(self.result.comparisons if self.result is not None else ())
        return export.atomic_write(Path(path), lambda temporary: Path(temporary).write_text(text, encoding="utf-8"))

    def save_plot(self, path, width: int = 1000, height: int = 700) -> Path:
        if self.shape is None:
            raise export.ExportError(f"Cannot export {path}: open a model or a config first.")
        return save_bytes_plot(Path(path), self.shape, self.ranks(), self.source_name, width, height,
                               export_dialogs.figure_theme(self))

    def make_export_actions(self) -> list[QAction]:
        actions = []
        for label, saver, filters in (
                ("Export KV variant table as CSV…", self.save_table_csv, "CSV (*.csv)"),
                ("Export bytes-vs-tokens plot as PNG/SVG…", self.save_plot, "Images (*.png *.svg)"),
                ("Export what-if steps as CSV…", self.save_steps_csv, "CSV (*.csv)")):
            action = QAction(label, self)
            action.triggered.connect(lambda _=False, s=saver, f=filters, t=label: self._ask_and_save(s, f, t))
            actions.append(action)
        return actions

    def _ask_and_save(self, saver, filters: str, title: str) -> None:
        path = export_dialogs.ask_path(self, title, f"kv_lab_{self.source_name or 'model'}", filters)
        if path is not None:
            try:
                saver(path)
            except ExplorerError as error:
                self.session.report_error(str(error))

    def open_variants_window(self, models=None, make_worker=None):
        """The natively trained MHA, MQA, GQA and MLA models side by side, each on its own worker."""
        options = {} if make_worker is None else {"make_worker": make_worker}
        self.variants_window = VariantsWindow(models, **options)
        self.variants_window.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        self.variants_window.show()
        return self.variants_window
