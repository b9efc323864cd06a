"""Mask evolution: which keys each query may attend, step by step, per layer as it really is.

Prefill draws the square causal mask; every decoding step adds one row, drawn in
the highlight colour. A slider replays the steps. Sliding-window layers show
their band of W keys, encoders the full square.
"""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QHBoxLayout, QLabel, QSlider, QSpinBox

from explorer.app.panels.base import Panel
from explorer.app.panels.heatmap import Heatmap, short_label
from explorer.app.session import Selection

MASKED, ALLOWED, NEW_ROW = 0, 1, 2
COLOURS = pg.ColorMap(pos=[0.0, 0.5, 1.0], color=["#23232b", "#3b7dd8", "#ffb000"])

RULES = {
    "causal": "causal: M_{ij} = 1 iff j ≤ i",
    "sliding": "sliding window: M_{ij} = 1 iff i − W < j ≤ i, W = {w}",
    "full": "full (bidirectional): M_{ij} = 1 for all i, j",
}


def mask_at_step(trace, layer: int, step: int | None, cross: bool = False) -> np.ndarray:
    """The mask up to `step` with the rows that step added marked NEW_ROW: (T_q, T_kv) of 0/1/2."""
    mask = trace.mask(layer, step, cross)
    shown = mask.astype(np.float32)
    index = trace.n_steps - 1 if step is None else step
    new_rows = trace.steps[index].n_new
    if index > 0:
        shown[-new_rows:][mask[-new_rows:]] = NEW_ROW
    return shown


class MaskPanel(Panel):
    title = "Mask"
    object_name = "mask"

    def __init__(self, session, parent=None) -> None:
        super().__init__(session, parent)
        controls = QHBoxLayout()
        self.layer_box = QSpinBox()
        self.slider = QSlider(Qt.Orientation.Horizontal)
        self.slider.setPageStep(1)
        self.step_label = QLabel("step –")
        controls.addWidget(QLabel("layer"))
        controls.addWidget(self.layer_box)
        controls.addWidget(QLabel("replay"))
        controls.addWidget(self.slider, 1)
        controls.addWidget(self.step_label)
        self.body.addLayout(controls)
        self.kinds_label = QLabel()
        self.kinds_label.setWordWrap(True)
        self.body.addWidget(self.kinds_label)
        self.view = pg.GraphicsLayoutWidget()
        self.heatmap = Heatmap(self.view.ci, colorbar=False)
        self.heatmap.set_colormap(COLOURS)
        self.heatmap.plot.setLabels(left="query i", top="key j")
        self.body.addWidget(self.view, 1)
        self.heatmap.on_hover = self._hover
        self.heatmap.on_click = lambda row, col: self.select(token=row)
        self.layer_box.valueChanged.connect(lambda v: self.select(layer=v))
        self.slider.valueChanged.connect(self._slid)
        self.add_to_plot_menu(self.heatmap.plot)
        self.mask: np.ndarray | None = None
        self._drawn = None

    def redraw(self) -> None:
        self._drawn = None
        trace = self.trace
        if trace is None or not trace.steps:
            self.mask = None
            self.heatmap.set_matrix(np.zeros((0, 0)), (0, 2))
            self.set_formula("M ∈ {0,1}^{N_Q×N_KV}")
            return
        self.layer_box.setRange(0, trace.model.n_layers - 1)
        self.slider.setRange(0, trace.n_steps - 1)
        kinds = trace.model.layer_kinds
        self.kinds_label.setText("layers: " + "  ".join(
            f"<b>L{i}</b> {kind}" for i, kind in enumerate(kinds)) if len(kinds) <= 48 else "")

    def show_selection(self, selection: Selection) -> None:
        trace = self.trace
        if trace is None or not trace.steps:
            return
        step = trace.n_steps - 1 if selection.step is None else selection.step
        self.layer_box.setValue(selection.layer)
        self.slider.setValue(step)
        cross = selection.attention == "cross"
        key = (selection.layer, step, cross)
        if key != self._drawn:
            self._draw(selection.layer, step, cross)
            self._drawn = key
        self.heatmap.highlight(selection.token, selection.token)

    def _draw(self, layer: int, step: int, cross: bool) -> None:
        trace = self.trace
        self.mask = mask_at_step(trace, layer, step, cross)
        labels = [short_label(t) for t in trace.token_text]
        self.heatmap.set_matrix(self.mask, (0, 2), labels[: self.mask.shape[0]], labels[: self.mask.shape[1]],
                                keep_view=True)
        record = trace.steps[step]
        kind = "cross" if cross else trace.model.layer_kinds[layer]
        rule = RULES.get(kind, "cross-attention: every decoder query sees every encoder key").replace(
            "{w}", str(trace.model.sliding_window))
        n_q, n_kv = self.mask.shape
        self.set_formula(f"M ∈ {{0,1}}^{{{n_q}×{n_kv}}}   layer {layer}, {rule}")
        self.step_label.setText(f"step {step + 1}/{trace.n_steps} ({record.kind}, +{record.n_new} "
                                f"row{'s' if record.n_new != 1 else ''})")

    def _slid(self, value: int) -> None:
        trace = self.trace
        if trace is not None and trace.steps:
            self.select(step=None if value >= trace.n_steps - 1 else value)

    def _hover(self, row, col) -> None:
        if row is None or self.mask is None:
            return
        text = self.trace.token_text
        allowed = self.mask[row, col] != MASKED
        verdict = "may attend" if allowed else "is masked from"
        self.readout.setText(f"query {row} {text[row]!r} {verdict} key {col} {text[col]!r}")
