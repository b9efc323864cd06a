"""Q/K/V: for the selected layer and head, Q_h = X W_h^Q, K = X W^K and V = X W^V for every
token (after RoPE, or before it where it differs), which query heads share the
K/V head (GQA/MQA), and for MLA the latent c_KV and the decoupled RoPE key.
"""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtWidgets import QCheckBox, QHBoxLayout, QLabel, QSpinBox

from explorer.app.panels.base import Panel, dims
from explorer.app.panels.embeddings import symmetric_levels
from explorer.app.panels.heatmap import Heatmap, short_label
from explorer.app.session import Selection


def _records(trace, layer: int, step):
    end = trace.n_steps if step is None else step + 1
    return [s.layers[layer].attn for s in trace.steps[:end]]


def stacked(trace, layer: int, field: str, head: int | None, step=None) -> np.ndarray | None:
    """One recorded per-step field of one head (or a head-less one, like MLA's latent) over all tokens."""
    parts = []
    for record in _records(trace, layer, step):
        value = getattr(record, field)
        if value is None:
            return None
        parts.append(value[head] if head is not None else value)
    return np.concatenate(parts, axis=0).astype(np.float32)


class QKVPanel(Panel):
    title = "Q / K / V"
    object_name = "qkv"

    def __init__(self, session, parent=None) -> None:
        super().__init__(session, parent)
        controls = QHBoxLayout()
        self.layer_box, self.head_box = QSpinBox(), QSpinBox()
        self.pre_rope = QCheckBox("before RoPE")
        for label, widget in (("layer", self.layer_box), ("head", self.head_box)):
            controls.addWidget(QLabel(label))
            controls.addWidget(widget)
        controls.addWidget(self.pre_rope)
        self.sharing = QLabel()
        controls.addWidget(self.sharing, 1)
        self.body.addLayout(controls)
        self.view = pg.GraphicsLayoutWidget()
        self.body.addWidget(self.view, 1)
        self.layer_box.valueChanged.connect(lambda v: self.select(layer=v))
        self.head_box.valueChanged.connect(lambda v: self.select(head=v))
        self.pre_rope.toggled.connect(lambda _: None if self._updating else self._draw(self.session.selection))
        self.heatmaps: dict[str, Heatmap] = {}
        self.matrices: dict[str, np.ndarray] = {}
        self._drawn = None

    def redraw(self) -> None:
        self._drawn = None
        trace = self.trace
        if trace is None or not trace.steps:
            return
        self.layer_box.setRange(0, trace.model.n_layers - 1)
        self.head_box.setRange(0, trace.model.n_heads - 1)
        record = trace.steps[0].layers[0].attn
        self.pre_rope.setEnabled(record.q_pre_rope is not None)

    def show_selection(self, selection: Selection) -> None:
        trace = self.trace
        if trace is None or not trace.steps:
            return
        self.layer_box.setValue(selection.layer)
        self.head_box.setValue(selection.head)
        key = (selection.layer, selection.head, selection.step)
        if key != self._drawn:
            self._draw(selection)
            self._drawn = key
        for heatmap in self.heatmaps.values():
            heatmap.highlight(selection.token, None)

    def _matrices(self, selection: Selection) -> dict[str, np.ndarray]:
        trace, layer, step = self.trace, selection.layer, selection.step
        head, kv = selection.head, trace.kv_head_of(selection.head)
        before = self.pre_rope.isChecked() and self.pre_rope.isEnabled()
        q_field, k_field = ("q_pre_rope", "k_pre_rope") if before else ("q", "k")
        out = {f"Q_{head}": stacked(trace, layer, q_field, head, step),
               f"K_{kv}": stacked(trace, layer, k_field, kv, step),
               f"V_{kv}": stacked(trace, layer, "v", kv, step)}
        for name, field in (("c_KV", "latent"), ("k_R", "k_rope")):
            value = stacked(trace, layer, field, None, step)
            if value is not None:
                out[name] = value
        return {name: m for name, m in out.items() if m is not None}

    def _draw(self, selection: Selection) -> None:
        trace = self.trace
        self.matrices = self._matrices(selection)
        if list(self.heatmaps) != list(self.matrices):
            self.view.clear()
            self.heatmaps = {name: Heatmap(self.view.ci, row=0, col=i, colorbar=i == len(self.matrices) - 1,
                                           colormap="CET-D1", axes=("left", "bottom"))
                             for i, name in enumerate(self.matrices)}
            for name, heatmap in self.heatmaps.items():
                heatmap.plot.setTitle(name, size="10pt")
                heatmap.on_click = lambda row, col: self.select(token=row)
                heatmap.on_hover = lambda row, col, name=name: self._hover(name, row, col)
                if heatmap is not next(iter(self.heatmaps.values())):
                    heatmap.plot.setYLink(next(iter(self.heatmaps.values())).plot)
        levels = symmetric_levels(np.concatenate([m.ravel() for m in self.matrices.values()]))
        labels = [f"{i} {short_label(t)}" for i, t in enumerate(trace.token_text)]
        for name, matrix in self.matrices.items():
            self.heatmaps[name].set_matrix(matrix, levels, labels[: len(matrix)],
                                           [str(i) for i in range(matrix.shape[1])], keep_view=True)
        self._describe(trace, selection)

    def _describe(self, trace, selection: Selection) -> None:
        h, kv = selection.head, trace.kv_head_of(selection.head)
        shapes = {name: m.shape for name, m in self.matrices.items()}
        q, k, v = (shapes[f"Q_{h}"], shapes[f"K_{kv}"], shapes[f"V_{kv}"])
        formula = (f"Q_{h} = X W_{h}^Q ∈ {dims(*q)},  K_{kv} = X W_{kv}^K ∈ {dims(*k)},"
                   f"  V_{kv} = X W_{kv}^V ∈ {dims(*v)}")
        if "c_KV" in shapes:
            formula += f",  c_KV = X W^{{DKV}} ∈ {dims(*shapes['c_KV'])}"
        if "k_R" in shapes:
            formula += f",  k_R = RoPE(X W^{{KR}}) ∈ {dims(*shapes['k_R'])}"
        self.set_formula(formula + f"   (layer {selection.layer})")
        sharing = trace.query_heads_of(kv)
        model = trace.model
        if model.attention in ("gqa", "mqa"):
            self.sharing.setText(f"{model.attention.upper()}: K/V head {kv} is shared by query heads "
                                 + ", ".join(str(x) for x in sharing))
        elif model.attention == "mla":
            self.sharing.setText("MLA: K and V of every head are expanded from the shared latent c_KV")
        else:
            self.sharing.setText(f"MHA: head {h} has its own K and V")

    def _hover(self, name: str, row, col) -> None:
        if row is None or name not in self.matrices:
            return
        text = self.trace.token_text[row]
        self.readout.setText(f"{name}[{row}, {col}] = {self.matrices[name][row, col]:.6g}   token {text!r}")
