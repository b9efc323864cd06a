"""Mask evolution: which keys each query may attend, step by step, per layer as it really is.

Prefill draws the square causal mask; every decoding step adds one row, drawn in
the highlight colour. A slider replays the steps. Sliding-window layers show
their band of W keys, encoders the full square. With an encoder-decoder it shows the
kind of attention chosen (trace_views): the encoder's full square over the source,
the decoder's growing causal triangle, or the cross-attention's rectangle, target
rows × source columns, where nothing is masked and each step adds a row.

It draws from each step's mask rule (views.mask_blocks), never the T × T array: a long trace is drawn
as block maxima over its real extent, so the axes still count tokens, and the hover reads the exact cell.
"""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QColor, QPen
from PySide6.QtWidgets import QGraphicsRectItem, QHBoxLayout, QLabel, QSlider, QSpinBox

from explorer.app.panels.base import LABELS_A_TURN, LONG_ROWS, LineLabel, Panel, measuring
from explorer.app.state.session import Selection
from explorer.app.widgets.attention_kind import AttentionKindBox
from explorer.app.widgets.token_labels import GrowingLabels, tick_labels
from explorer.drawing.heatmap import Heatmap
from explorer.drawing.heatmap_axes import unmeasured
from explorer.views import trace_views
from explorer.views.mask_blocks import ALLOWED, MASKED, NEW_ROW, mask_allowed, mask_blocks
from explorer.views.words import step_name

__all__ = ["ALLOWED", "MASKED", "NEW_ROW", "MaskPanel"]
MIN_VIEW_PX = 250           # a 120 px view of the rows under upright key labels
COLOURS = pg.ColorMap(pos=[0.0, 0.5, 1.0], color=["#23232b", "#3b7dd8", "#ffb000"])

RULES = {
    "causal": "causal: M_{ij} = 1 iff j ≤ i",
    "sliding": "sliding window: M_{ij} = 1 iff i − W < j ≤ i, W = {w}",
    "full": "full (bidirectional): M_{ij} = 1 for all i, j",
    "cross": "cross-attention: M_{ij} = 1 for every target query i and source key j (nothing masked)",
}


class MaskPanel(Panel):
    title = "Mask"
    object_name = "mask"

    def __init__(self, session, parent=None) -> None:
        super().__init__(session, parent)
        controls = QHBoxLayout()
        self.layer_box = QSpinBox()
        self.slider = QSlider(Qt.Orientation.Horizontal)
        self.slider.setPageStep(1)
        self.step_label = LineLabel("step –")
        controls.addWidget(QLabel("layer"))
        controls.addWidget(self.layer_box)
        controls.addWidget(QLabel("replay"))
        controls.addWidget(self.slider, 2)
        controls.addWidget(self.step_label, 1)          # a share of the row, whatever its text
        self.kind_box = AttentionKindBox(self)
        controls.addWidget(self.kind_box)
        self.body.addLayout(controls)
        self.kinds_label = QLabel()
        self.kinds_label.setWordWrap(True)
        self.body.addWidget(self.kinds_label)
        self.canvas = self.view = pg.GraphicsLayoutWidget()     # self.view: the trace's view, once drawn
        self.view.setMinimumHeight(MIN_VIEW_PX)          # rows a person can tell apart, not a 75 px strip
        self.heatmap = Heatmap(self.view.ci, colorbar=False)
        self.heatmap.set_colormap(COLOURS)
        self.heatmap.plot.setLabels(left="query i", top="key j")
        self.body.addWidget(self.view, 1)
        self.heatmap.on_hover = self._hover
        self.heatmap.on_click = lambda row, col: self.view and self.view.kind != "encoder" and self.select(token=row)
        self.layer_box.valueChanged.connect(lambda v: self.select(layer=v))
        self.slider.valueChanged.connect(self._slid)
        self.add_to_plot_menu(self.heatmap.plot)
        self.new_rows_box = self._new_rows_box()
        self.mask: np.ndarray | None = None      # the picture drawn: the mask itself, or its block maxima
        self.factor = 1                          # cells a side of one block of `mask`
        self.extent = (0, 0)                     # (T_q, T_kv): the mask's real rows and columns
        self.view: trace_views.View | None = None
        self._drawn = None
        self.row_labels, self.column_labels = GrowingLabels(), GrowingLabels()   # a step adds a row's and a key's

    def redraw(self) -> None:
        self._drawn = None
        trace = self.trace
        if trace is None or not trace.steps:
            self.mask, self.extent = None, (0, 0)
            self.heatmap.set_matrix(np.zeros((0, 0)), (0, 2))
            self.set_formula("M ∈ {0,1}^{N_Q×N_KV}")
            return
        self.slider.setRange(0, trace.n_steps - 1)
        kinds = trace.model.layer_kinds
        self.kinds_label.setText("layers: " + "  ".join(
            f"<b>L{i}</b> {kind}" for i, kind in enumerate(kinds)) if len(kinds) <= 48 else "")

    def show_selection(self, selection: Selection) -> None:
        trace = self.trace
        if trace is None or not trace.steps:
            return
        step = trace.n_steps - 1 if selection.step is None else selection.step
        self.view = view = trace_views.view(trace, selection.attention, step)
        self.kind_box.show_kind(trace.model, view.kind)
        layer = min(selection.layer, view.n_layers - 1)
        self.layer_box.setRange(0, view.n_layers - 1)
        self.layer_box.setValue(layer)
        self.slider.setValue(step)
        key = (layer, step, view.kind)
        if key != self._drawn:
            self._draw(view, layer, step)
            self._drawn = key
        self._highlight(selection)

    def _highlight(self, selection: Selection) -> None:
        token = selection.token if self.view.kind != "encoder" else None
        self.heatmap.highlight(token, token if self.view.kind == "self" else None)

    def _draw(self, view: trace_views.View, layer: int, step: int) -> None:
        """Draw the mask: at once, or, when the panel comes into sight with a long trace it has not folded yet or
        whose row labels no axis has measured yet, in parts over several turns of the event loop (folding 8,000
        rows into blocks and measuring 8,000 row labels held the window 0.3–0.5 s at the tab's first raise)."""
        texts = view.row_text()
        in_turns = self.raising and len(texts) >= LONG_ROWS and (                     # (not a step's one new row)
            self.mask is None or unmeasured(tick_labels(texts, numbered=True)) >= LABELS_A_TURN)
        self.draw_in_parts(self._draw_parts(view, layer, step), in_turns)

    def _draw_parts(self, view: trace_views.View, layer: int, step: int):
        """The drawing, a part between yields (draw_in_parts): the mask folded into blocks, its row labels
        measured a share at a time, then drawn. The map is painted once drawn: a plot painted before its data
        keeps another axis size (pyqtgraph's text room only grows)."""
        self.canvas.setUpdatesEnabled(False)
        try:
            yield from self._draw_map(view, layer, step)
            yield                               # the map's first paint in a turn of its own
        finally:
            self.canvas.setUpdatesEnabled(True)
        self._highlight(self.session.selection)

    def _draw_map(self, view: trace_views.View, layer: int, step: int):
        trace = view.trace
        yield
        picture = mask_blocks(trace, layer, view.step, view.cross)
        self.mask, self.factor = picture.blocks, picture.factor
        numbered = picture.factor > 1                 # thousands of tokens: a label says where it is, too
        rows = self.row_labels(view.row_text()[: picture.shape[0]], numbered)
        cols = self.column_labels(view.column_text()[: picture.shape[1]], numbered)
        yield from measuring(rows)
        yield
        # Over the real extent: the axes, the hover and the highlight count tokens whatever the blocks.
        self.heatmap.set_matrix(self.mask, (0, 2), rows, cols, keep_view=True, extent=picture.shape)
        self.extent = picture.shape
        self._outline_new_rows(trace, view, step)
        names = {"encoder": ("source query i", "source key j"), "cross": ("target query i", "source key j")}
        self._set_axis_titles(*names.get(view.kind, ("query i", "key j")))
        kind = "cross" if view.cross else trace.model.layer_kinds[layer]
        rule = RULES.get(kind, kind).replace("{w}", str(trace.model.sliding_window))
        n_q, n_kv = picture.shape
        where = {"encoder": "encoder ", "self": "decoder " if self.trace.model.is_encoder_decoder else ""}
        self.set_formula(f"M ∈ {{0,1}}^{{{n_q}×{n_kv}}}   {where.get(view.kind, '')}layer {layer}, {rule}")
        if self.trace.model.is_encoder_decoder:
            names = {"encoder": "encoder layers", "self": "decoder layers",
                     "cross": "cross-attention of the decoder layers"}
            kinds = ("cross",) * view.n_layers if view.cross else trace.model.layer_kinds
            self.kinds_label.setText(f"{names[view.kind]}: " + "  ".join(
                f"<b>L{i}</b> {'unmasked' if kind == 'cross' else kind}" for i, kind in enumerate(kinds)))
        if view.kind == "encoder":
            self.step_label.setText("the encoder pass: once, over the whole source, before any target token")
        else:
            record = self.trace.steps[step]
            self.step_label.setText(f"{step_name(step)} of {self.trace.n_steps - 1} (+{record.n_new} "
                                    f"row{'s' if record.n_new != 1 else ''})")

    def _set_axis_titles(self, left: str, top: str) -> None:
        """Title the axes; the same titles again change nothing (pyqtgraph lays both axes out again)."""
        axes = self.heatmap.axes
        if (axes["left"].labelText, axes["top"].labelText) != (left, top):
            self.heatmap.plot.setLabels(left=left, top=top)

    def _new_rows_box(self) -> QGraphicsRectItem:
        box = QGraphicsRectItem()
        pen = QPen(QColor(COLOURS.map(1.0, mode="qcolor")), 2)
        pen.setCosmetic(True)                       # 2 px on screen at any zoom
        box.setPen(pen)
        box.setZValue(9)
        box.setVisible(False)
        self.heatmap.plot.addItem(box)
        return box

    def _outline_new_rows(self, trace, view: trace_views.View, step: int) -> None:
        """Outline the rows the step added where they are thinner than a screen pixel (a long trace's one
        row among thousands), so that the highlight colour still shows where the step is."""
        n_q, n_kv = self.extent
        new = trace.steps[step].n_new if view.kind != "encoder" and step > 0 else 0
        self.new_rows_box.setVisible(bool(new) and self.factor > 1)
        if new:
            self.new_rows_box.setRect(QRectF(-0.5, n_q - new - 0.5, n_kv, new))

    def _slid(self, value: int) -> None:
        trace = self.trace
        if trace is not None and trace.steps:
            self.select(step=None if value >= trace.n_steps - 1 else value)

    def _hover(self, row, col) -> None:
        if row is None or self.mask is None or self.view is None or self._drawn is None:
            return
        rows, cols = self.view.row_text(), self.view.column_text()
        allowed = mask_allowed(self.view.trace, self._drawn[0], row, col, self.view.step, self.view.cross)
        verdict = "may attend" if allowed else "is masked from"
        self.readout.setText(f"query {row} {rows[row]!r} {verdict} key {col} {cols[col]!r}")
