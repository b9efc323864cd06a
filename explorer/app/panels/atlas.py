"""Head atlas: what each head does, as layer x head maps that can be sorted and filtered.

On the model's own random tokens repeated twice (explorer.core.head_scores, asked of the model
thread): previous-token, induction and sink scores. On the user's own text (the trace, numpy
here): attention entropy, mean distance back, and the share on the first token. Clicking a head
selects it (the attention views open it large) and shows its pattern on the repeated tokens.

A long text's maps are rebuilt from Q and K, so its description is read on a thread of its own,
layer by layer under a progress bar with Cancel (atlas_reading.py), and its example map is drawn
as block maxima computed in the background (long_head.py).

Cancel (and Stop, Esc) stops what the atlas computes, the reading and the scoring alike: the panel then
says where it stopped ("cancelled at k of L", or that the heads were not scored) beside a Resume, and asks
nothing again until the person presses it, or another run or model comes. Another run or model leaves nothing of
the scores before while the new ones are scored: no map, list, example or colour bar (its place kept).
"""
from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QComboBox,
    QDoubleSpinBox,
    QHBoxLayout,
    QLabel,
    QSplitter,
    QTableWidgetItem,
)

from explorer.app.panels.base import Panel, WrappedText, decoder_view_unavailable, stopped_text
from explorer.app.state.session import Selection
from explorer.app.thread.requests import HeadScoresJob
from explorer.app.widgets.ablation_marks import AblationMarks, ablated_heads
from explorer.app.widgets.asking import Asker
from explorer.app.widgets.atlas_parts import head_table, reading_progress, show_colorbar, title_never_widens
from explorer.app.widgets.atlas_reading import DescriptionReader
from explorer.app.widgets.atlas_shares import SHARES, AtlasShares
from explorer.app.widgets.long_head import LongHead, Request
from explorer.app.widgets.plot_text import SMALL_TITLE
from explorer.drawing.heatmap import Heatmap
from explorer.views import trace_views
from explorer.views.long_maps import is_long
from explorer.views.maps import attention_matrix

# (label, where it comes from, field, formula)
METRICS = {
    "induction": ("repeated", "induction", "mean_{i=N..T-1} A[i, i-N+1] on random ids repeated twice"),
    "previous token": ("repeated", "previous_token", "mean_{i=1..T-1} A[i, i-1] on random ids repeated twice"),
    "sink": ("repeated", "sink", "mean_{i=1..T-1} A[i, 0] on random ids repeated twice"),
    "entropy": ("text", "entropy", "mean_i −Σ_j A_ij ln A_ij on this text (nats)"),
    "distance": ("text", "distance", "mean_i Σ_j A_ij (i − j) on this text (tokens back)"),
    "first token": ("text", "first_token", "mean_i A_i0 on this text"),
}
LISTED = 40


class AtlasPanel(Panel):
    title = "Head atlas"
    object_name = "atlas"
    stop_holds = True           # a Stop cancels the reading and the scoring until Resume (base.Panel.stop_work)

    def __init__(self, session, parent=None) -> None:
        super().__init__(session, parent)
        self.executor = None                # None: the session's model thread (tests give their own)
        self.reader = DescriptionReader(self)          # the text's description, read beside the GUI when long
        self.reader.progressed.connect(self.refresh)
        self.body.addLayout(self._controls())
        self.caption = WrappedText()        # wrapped whole under the controls: beside them it was cut at 1366x768
        self.body.addWidget(self.caption)
        self.splitter = QSplitter(Qt.Orientation.Horizontal)
        # The two maps are built when first drawn, one a turn when the tab is raised (build_plots): their
        # PlotItems, axes and menus in the turn that built the panel held the window ~140 ms.
        self.view, self.example_view = pg.GraphicsLayoutWidget(), pg.GraphicsLayoutWidget()
        self._map: Heatmap | None = None
        self._example: Heatmap | None = None
        self._long_example: LongHead | None = None      # the example of a long text: titles it with its size, blocks
        self._ablation_marks: AblationMarks | None = None      # the heads the experiments on ablate
        session.experiments_changed.connect(lambda _experiments: self._mark_ablations())
        self.table = head_table()
        self.table.cellClicked.connect(lambda row, _: self._clicked(*self._listed[row]))
        for widget in (self.view, self.table, self.example_view):
            self.splitter.addWidget(widget)
        self.splitter.setSizes([s * 100 for s in SHARES])
        self.shares = AtlasShares(self, self.splitter, self.table, self._plot_views)
        self.body.addWidget(self.splitter, 1)
        self.asker = Asker(self, self._on_scores, self.error_line.show_error)
        self.scores = None
        self.described = None
        self.values: np.ndarray | None = None
        self._listed: list[tuple[int, int]] = []
        self._described_for = None
        self.set_formula(METRICS["induction"][2])

    def _controls(self) -> QHBoxLayout:
        """The score, the floor of the list, and the reading's progress bar and Cancel."""
        controls = QHBoxLayout()
        self.metric_box = QComboBox()
        self.metric_box.addItems(list(METRICS))
        self.metric_box.currentIndexChanged.connect(lambda _: self.refresh())
        self.floor_box = QDoubleSpinBox()
        self.floor_box.setRange(-1e6, 1e6)
        self.floor_box.setDecimals(2)
        self.floor_box.setSingleStep(0.05)
        self.floor_box.setValue(0.0)
        self.floor_box.valueChanged.connect(lambda _: self.refresh())
        for label, widget in (("score", self.metric_box), ("list heads with at least", self.floor_box)):
            controls.addWidget(QLabel(label))
            controls.addWidget(widget)
        controls.addStretch(1)
        self.progress, self.cancel_button = reading_progress()
        self.cancel_button.clicked.connect(self._cancel_or_resume)
        controls.addWidget(self.progress)
        controls.addWidget(self.cancel_button)
        return controls

    # ----- the two maps, built when first needed --------------------------------------
    def plots_built(self) -> bool:
        return self._example is not None

    def build_plots(self) -> Iterator[None]:
        """The scores map, then the example with its long map's drawing, one a turn."""
        if self._map is None:
            self._map = Heatmap(self.view.ci, row=0, col=0, colormap="viridis", axes=("left", "top"))
            self._map.on_click = self._clicked
            self._map.on_hover = self._hover
            self._ablation_marks = AblationMarks(self._map.plot)
            self.shares.watch(self._map.plot)
            yield
        if self._example is None:
            example = Heatmap(self.example_view.ci, row=0, col=0, colorbar=False, axes=("left", "top"))
            self._long_example = LongHead(example, parent=self)
            title_never_widens(example.plot)
            self.shares.watch(example.plot)
            self._example = example
            yield

    @property
    def map(self) -> Heatmap:
        self.plots_now()
        return self._map

    @property
    def example(self) -> Heatmap:
        self.plots_now()
        return self._example

    @property
    def long_example(self) -> LongHead:
        self.plots_now()
        return self._long_example

    @property
    def ablation_marks(self) -> AblationMarks:
        self.plots_now()
        return self._ablation_marks

    def _plot_views(self) -> list[tuple[pg.GraphicsView, pg.PlotItem]] | None:
        """Each map's widget and plot, once built (AtlasShares measures them)."""
        if not self.plots_built():
            return None
        return [(self.view, self._map.plot), (self.example_view, self._example.plot)]

    def _built_and_drawn(self) -> Iterator[None]:
        """A raise's drawing with the maps still to build: the raise's turn lays out the controls and the list, a
        map is built a turn, then drawn."""
        yield
        yield from self.build_plots()
        self.redraw()
        self.show_selection(self.session.selection)

    @property
    def metric(self) -> str:
        return self.metric_box.currentText()

    def follows_prompt(self) -> bool:
        """A score on random tokens repeated twice is the model's own: an edited prompt leaves it current (drive26:
        "Out of date" over the induction scores once a word was typed)."""
        return METRICS[self.metric][0] != "repeated"

    def unavailable(self, trace) -> str | None:
        return decoder_view_unavailable(trace, "The head atlas")

    def forget(self) -> None:
        """No score, description, list or example of another model or run."""
        self.scores = self.described = self.values = self._described_for = None
        self._listed = []
        if self._map is not None:
            self._map.clear()
            self._map.tile_box.setVisible(False)
            self._ablation_marks.show([])
            show_colorbar(self._map, False)        # its range was the scores dropped (issue 22, M3)
        if self._example is not None:
            self._example.clear()
        self.table.setRowCount(0)
        self.caption.set_plain("")

    def redraw(self) -> None:
        trace = self.trace
        if trace is None or not trace.steps:
            return
        if not self.plots_built():
            if self.raising:
                self.draw_in_parts(self._built_and_drawn(), in_turns=True)
                return
            self.plots_now()
        source, name, formula = METRICS[self.metric]
        self.set_formula(f"{self.metric} = {formula}")
        if source == "repeated":
            self._ask_scores(trace)
            values = None if self.scores is None else getattr(self.scores, name)
        else:
            values = getattr(self._description(trace), name)
        self._show_reading(trace, source)
        if values is None:
            self.caption.set_plain(stopped_text("scoring every head on random tokens repeated twice", "Resume")
                                 if self._scoring_stopped(trace)
                                 else "scoring every head on random tokens repeated twice…")
            return
        self.values = values
        n_layers, n_heads = values.shape
        self.map.set_matrix(values, row_labels=[f"L{l}" for l in range(n_layers)],
                            col_labels=[f"H{h}" for h in range(n_heads)])
        show_colorbar(self.map, True)
        self._fill_list(values)
        self._mark_ablations()
        self.caption.set_plain(self._caption(values))

    def _mark_ablations(self) -> None:
        """A dashed cross over every head an experiment that is on ablates."""
        values = self.values
        if self._ablation_marks is None:
            return                   # marked once the map is built and drawn
        heads = [] if values is None else [(l, h) for l, h in ablated_heads(self.session.experiments)
                                           if l < values.shape[0] and h < values.shape[1]]
        self.ablation_marks.show([(l, h, 1, 1) for l, h in heads])

    def _caption(self, values: np.ndarray) -> str:
        done = int(np.isfinite(values).all(axis=1).sum())
        if done == 0:
            return f"{self.metric}: reading every head's map of this text, layer by layer…"
        best = np.unravel_index(int(np.nanargmax(values)), values.shape)
        so_far = "" if done == len(values) else f" of layers 0–{done - 1} so far"     # first: a narrow caption cuts
        floor = self.floor_box.value()
        qualify = int((values >= floor).sum())         # the list stops at LISTED: say how many it leaves out
        listed = f"{qualify}" if qualify == len(self._listed) else f"the {len(self._listed)} largest of {qualify}"
        return (f"{self.metric}{so_far}: highest L{best[0]}.H{best[1]} = {values[best]:.3f}; {listed} "
                f"heads at least {floor:g}, largest first")

    def show_selection(self, selection: Selection) -> None:
        if not self.plots_built():
            return                   # shown by the drawing that builds the maps (_built_and_drawn)
        if self.values is not None and selection.layer < self.values.shape[0] and \
                selection.head < self.values.shape[1]:
            self.map.outline(selection.layer, selection.head, 1, 1)
        else:           # no map yet (a new model being scored): no frame of a head over the empty plot
            self.map.tile_box.setVisible(False)
        self._show_example(selection.layer, selection.head)

    # ----- the two sources ------------------------------------------------------------
    def _ask_scores(self, trace) -> None:
        self.asker.ask(trace.model.name, HeadScoresJob())

    def _scoring_stopped(self, trace) -> bool:
        return self.scores is None and self.asker.stopped == trace.model.name

    def _on_scores(self, key, scores) -> None:
        self.scores = scores
        self.refresh()

    def _description(self, trace):
        """The text's description: kept once every layer is read, else asked of the reader again (cheap: it
        looks up what its thread read so far, and starts the reading of the rest)."""
        if self._described_for is not trace or self.described.layers_done < trace.model.n_layers:
            self._described_for, self.described = trace, self.reader.description(trace)
        return self.described

    def _show_reading(self, trace, source: str) -> None:
        """The progress bar and Cancel while the text is read (Cancel alone while the heads are scored); Resume
        once either was cancelled before the end."""
        reader, n_layers = self.reader, trace.model.n_layers
        shown = reader.running or reader.stopped_for(trace)
        done = self._description(trace).layers_done if shown else n_layers
        stopped = reader.stopped_for(trace) and done < n_layers
        working = reader.running or (source == "repeated" and self.asker.busy)
        self.progress.setVisible(reader.running or stopped)
        self.cancel_button.setVisible(working or stopped or (source == "repeated" and self._scoring_stopped(trace)))
        self.progress.setRange(0, n_layers)
        self.progress.setValue(done)
        self.progress.setFormat("%v of %m layers read" if reader.running else "cancelled at %v of %m")
        self.cancel_button.setText("Cancel" if working else "Resume")
        if reader.failure:
            self.error_line.show_error(reader.failure)

    def _cancel_or_resume(self) -> None:
        if self.reader.running or self.asker.busy:
            self.stop_work()
            self.refresh()
        elif self.trace is not None:
            reading = self.reader.stopped_for(self.trace) or METRICS[self.metric][0] == "text"
            self.resume_work()
            if reading:
                self._description(self.trace)              # reads on from the layers kept
            self.refresh()                                 # and asks for the scores again

    def stop_work(self) -> None:
        """Stop the reading too (its thread drops it at the next head): neither it nor the scoring is asked again
        until Resume, or another run or model."""
        self.reader.cancel()
        super().stop_work()

    def resume_work(self) -> None:
        self.reader.resume()
        super().resume_work()

    def _on_trace_changed(self, trace) -> None:
        self.reader.trace_changed(trace)
        super()._on_trace_changed(trace)

    # ----- list, example, pointer -----------------------------------------------------
    def _fill_list(self, values: np.ndarray) -> None:
        order = np.argsort(-values, axis=None)
        heads = [tuple(int(v) for v in np.unravel_index(int(i), values.shape)) for i in order]
        self._listed = [(l, h) for l, h in heads if values[l, h] >= self.floor_box.value()][:LISTED]
        self.table.setRowCount(len(self._listed))
        for row, (layer, head) in enumerate(self._listed):
            for column, text in enumerate((f"L{layer}", f"H{head}", f"{values[layer, head]:.3f}")):
                self.table.setItem(row, column, QTableWidgetItem(text))
        self.table.resizeColumnsToContents()
        self.shares.list_changed()          # the list's columns are their own width now

    def _show_example(self, layer: int, head: int) -> None:
        repeated = METRICS[self.metric][0] == "repeated"
        if repeated and self.scores is None:
            # a repeated-tokens score's example is drawn on those tokens, which come with the scores: the text's
            # map was drawn meanwhile only to be replaced, at 8,000 tokens its block maxima computed and its
            # 8,000 labels laid out at the tab's first raise
            self.long_example.stop()
            self.example.clear()
            return
        example = self.scores.trace if repeated else self.trace
        if example is None or not example.steps or layer >= example.model.n_layers:
            return
        if is_long(example):                      # a long text's map: block maxima, computed in the background
            self.long_example.show(Request(trace_views.view(example), layer, (head,), "weights", False))
            return
        self.long_example.stop()
        matrix = attention_matrix(example, layer, head)
        self.example.set_matrix(matrix, (0.0, 1.0))
        where = "random tokens repeated twice" if example is not self.trace else "this text"
        self.example.plot.setTitle(f"L{layer}.H{head} on {where}", size=SMALL_TITLE)

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self.shares.resized()

    def _clicked(self, layer: int, head: int) -> None:
        self.select(layer=layer, head=head)

    def _hover(self, layer, head) -> None:
        if self.values is not None and layer is not None:
            value = float(self.values[layer, head])
            self.readout.setText(f"L{layer}.H{head}: {self.metric} " + (f"{value:.4f}" if np.isfinite(value)
                                                                         else "not read yet"))

