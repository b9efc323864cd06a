"""Q/K/V: for the selected layer and head, Q_h = X W_h^Q, K = X W^K and V = X W^V for every
token (after RoPE, or before it where it differs), which query heads share the
K/V head (GQA/MQA), and for MLA the latent c_KV and the decoupled RoPE key.

On request ("weights"), the projection weights W_h^Q, W^K and W^V of the head
(MLA: W^{DKV}, W^{KR}, W_h^{UK}, W_h^{UV}), read from the worker's model by
explorer.core.weights_view on the model thread, drawn below as heatmaps.

With an encoder-decoder it follows the attention kind chosen (trace_views): the
encoder's Q/K/V over the source, the decoder's over the target, or cross-attention's
Q from the decoder (target rows) with K = C W^K and V = C W^V from the encoder
output C (source rows, computed once).
"""
from __future__ import annotations

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QCheckBox, QLabel, QSpinBox, QSplitter, QWidget

from explorer.app.panels.base import (
    LABELS_A_TURN,
    LONG_ROWS,
    Panel,
    WrappedText,
    dims,
    formula_html,
    measuring,
    visible_text,
)
from explorer.app.state.session import Selection
from explorer.app.thread.requests import HeadWeightsJob
from explorer.app.widgets.attention_kind import AttentionKindBox
from explorer.app.widgets.flow_layout import FlowLayout
from explorer.app.widgets.map_grid import MapGrid
from explorer.app.widgets.model_call import Executor, ModelCall
from explorer.app.widgets.plot_text import TITLE
from explorer.app.widgets.stacked_rows import StackedRows
from explorer.app.widgets.token_labels import GrowingLabels
from explorer.drawing.heatmap import Heatmap, RowLink, symmetric_levels
from explorer.drawing.heatmap_axes import unmeasured
from explorer.views import trace_views


def _distinct(lists) -> list:
    """Each list once (the matrices of the same tokens share one list of labels)."""
    return list({id(labels): labels for labels in lists}.values())


def _records(trace, layer: int, step):
    end = trace.n_steps if step is None else step + 1
    return [s.layers[layer].attn for s in trace.steps[:end]]


class _Stacks:
    """One recorded per-step field of one head (or a head-less one, like MLA's latent) over all tokens, kept
    per field for the layer and head shown (StackedRows): a decoding step appends its rows."""

    def __init__(self) -> None:
        self._kept: dict[str, tuple[tuple, StackedRows]] = {}

    def stacked(self, trace, layer: int, field: str, head: int | None, step=None) -> np.ndarray | None:
        key = (layer, head)
        kept = self._kept.get(field)
        if kept is None or kept[0] != key:
            rows = StackedRows(lambda record: None if getattr(record, field) is None
                               else (getattr(record, field)[head] if head is not None else getattr(record, field)))
            kept = self._kept[field] = (key, rows)
        return kept[1].stack(_records(trace, layer, step))

    def levels(self, field: str) -> tuple[float, float] | None:
        kept = self._kept.get(field)
        return kept[1].levels() if kept is not None else None


class QKVPanel(Panel):
    title = "Q / K / V"
    object_name = "qkv"

    def __init__(self, session, executor: Executor | None = None, parent=None) -> None:
        super().__init__(session, parent)
        controls_row = QWidget()
        controls = FlowLayout(controls_row)        # wraps: one row asked 690 px with the translator's kind box
        self.layer_box, self.head_box = QSpinBox(), QSpinBox()
        self.pre_rope = QCheckBox("before RoPE")
        for label, widget in (("layer", self.layer_box), ("head", self.head_box)):
            controls.addWidget(QLabel(label))
            controls.addWidget(widget)
        controls.addWidget(self.pre_rope)
        self.weights_box = QCheckBox("projection weights")
        self.weights_box.setToolTip("read this head's projection weights from the model and draw them below")
        controls.addWidget(self.weights_box)
        self.kind_box = AttentionKindBox(self)
        controls.addWidget(self.kind_box)
        # Under the controls, the panel's width: beside them it had what they left (~200 px at 1366x768) and was
        # cut, "MLA: K and V of every head are expanded from the shared lat…" (drive21 m8).
        self.sharing = WrappedText()
        self.body.addWidget(controls_row)
        self.body.addWidget(self.sharing)
        self.maps, self.weight_grid = MapGrid(), MapGrid()      # each map keeps a legible view, scrolled to
        self.view, self.weights_view = self.maps.view, self.weight_grid.view
        self.weight_grid.setVisible(False)
        self.splitter = QSplitter(Qt.Orientation.Vertical)
        self.splitter.addWidget(self.maps)
        self.splitter.addWidget(self.weight_grid)
        self.body.addWidget(self.splitter, 1)
        self.executor = executor                   # None: the worker's model, through the session
        self.weights_call = ModelCall(self)
        self.weights_call.finished.connect(self._on_weights_ready)
        self.weights_call.failed.connect(self._on_weights_failed)
        self.weights_box.toggled.connect(self._on_weights_toggled)
        self.weight_maps: dict[str, Heatmap] = {}
        self.weights = None                        # the HeadWeights drawn, or None
        self._weights_key = None                   # (model, layer, head) asked for or drawn
        self.layer_box.valueChanged.connect(lambda v: self.select(layer=v))
        self.head_box.valueChanged.connect(lambda v: self.select(head=v))
        self.pre_rope.toggled.connect(lambda _: None if self._updating else self._draw(self.session.selection))
        self.heatmaps: dict[str, Heatmap] = {}
        self.row_link = RowLink()                  # Q, K, V of the same tokens scroll together
        self.matrices: dict[str, np.ndarray] = {}
        self._stacks = _Stacks()
        self.row_text: dict[str, tuple[str, ...]] = {}      # per matrix: the token of each row
        self._labels = {True: GrowingLabels(), False: GrowingLabels()}   # the target's rows, the source's
        self.attention_view: trace_views.View | None = None
        self._framed_kind = None                   # the attention kind the views were last framed for
        self._drawn = None

    def forget(self) -> None:
        """No weights of another model: asked again for the new one."""
        self.weights, self._weights_key, self._drawn = None, None, None
        self.weight_grid.clear()
        self.weight_maps = {}

    def redraw(self) -> None:
        self._drawn = None
        trace = self.trace
        if trace is None or not trace.steps:
            return
        self.head_box.setRange(0, trace.model.n_heads - 1)
        self.pre_rope.setEnabled(trace.has_pre_rope(0))

    def show_selection(self, selection: Selection) -> None:
        trace = self.trace
        if trace is None or not trace.steps:
            return
        self.attention_view = view = trace_views.view(trace, selection.attention, selection.step)
        self.kind_box.show_kind(trace.model, view.kind)
        self.layer_box.setRange(0, view.n_layers - 1)
        self.layer_box.setValue(min(selection.layer, view.n_layers - 1))
        self.head_box.setValue(selection.head)
        key = (selection.layer, selection.head, selection.step, view.kind)
        if key != self._drawn:
            self._draw(selection)
            self._drawn = key
        self._highlight(selection)
        self._request_weights(selection)

    def _highlight(self, selection: Selection) -> None:
        view = self.attention_view
        for name, heatmap in self.heatmaps.items():
            target_rows = view.kind == "self" or (view.kind == "cross" and name.startswith("Q"))
            heatmap.highlight(selection.token if target_rows else None, None)

    def _matrices(self, selection: Selection) -> dict[str, np.ndarray]:
        view = self.attention_view
        trace, layer, step = view.trace, min(selection.layer, view.n_layers - 1), view.step
        head, kv = selection.head, trace.kv_head_of(selection.head)
        if view.cross:                      # Q of the target; K, V of the source, made once from C
            return {f"Q_{head}": trace.q(layer, head, step, cross=True).astype(np.float32),
                    f"K_{kv}": trace.k(layer, kv, step, cross=True).astype(np.float32),
                    f"V_{kv}": trace.v(layer, kv, step, cross=True).astype(np.float32)}
        stacked = self._stacks.stacked
        if self.pre_rope.isChecked() and self.pre_rope.isEnabled():      # recorded, or rotated back
            q, k = trace.q_pre_rope(layer, head, step), trace.k_pre_rope(layer, kv, step)
        else:
            q, k = stacked(trace, layer, "q", head, step), stacked(trace, layer, "k", kv, step)
        out = {f"Q_{head}": None if q is None else q.astype(np.float32, copy=False),
               f"K_{kv}": None if k is None else k.astype(np.float32, copy=False),
               f"V_{kv}": stacked(trace, layer, "v", kv, step)}
        for name, field in (("c_KV", "latent"), ("k_R", "k_rope")):
            value = stacked(trace, layer, field, None, step)
            if value is not None:
                out[name] = value
        return {name: m for name, m in out.items() if m is not None}

    def _levels(self, name: str, matrix: np.ndarray) -> tuple[float, float]:
        """±max |x|: kept with the stacked rows, computed for a matrix made whole (before RoPE, cross)."""
        field = {"Q": "q", "K": "k", "V": "v", "c": "latent", "k": "k_rope"}[name[0]]
        from_stack = self._stacks.levels(field)
        made_here = self.pre_rope.isChecked() and field in ("q", "k") or self.attention_view.cross
        return symmetric_levels(matrix) if made_here or from_stack is None else from_stack

    def _draw(self, selection: Selection) -> None:
        """Draw the maps: at once, or, when the panel comes into sight with a long trace whose maps it must
        build, in parts over several turns of the event loop (a plot is built in ~50 ms, 8,000 row labels
        made in ~15 and measured in ~40: together they held the window 0.5–0.9 s at the tab's first raise)."""
        self.matrices = self._matrices(selection)
        build = list(self.heatmaps) != list(self.matrices)
        rows = max((len(m) for m in self.matrices.values()), default=0)
        in_turns = self.raising and rows >= LONG_ROWS and (build or sum(          # (not a step's one new label)
            unmeasured(labels) for labels in _distinct(self._row_labels().values())) >= LABELS_A_TURN)
        self.draw_in_parts(self._draw_parts(selection, build), in_turns)

    def _draw_parts(self, selection: Selection, build: bool):
        """The drawing, a part between yields (draw_in_parts): the formula and the maps' frame first, then each
        plot built, the plots laid out, the row labels made, then measured a share at a time, and each map
        drawn. The maps are painted once drawn: a plot painted before its data keeps another axis height
        (pyqtgraph's text room only grows)."""
        self._describe(self.attention_view.trace, selection)
        self.view.setUpdatesEnabled(False)
        try:
            yield from self._draw_maps(build)
            yield                               # the maps' first paint in a turn of its own
        finally:
            self.view.setUpdatesEnabled(True)
        self._highlight(self.session.selection)

    def _draw_maps(self, build: bool):
        if build:
            self.maps.clear()
            self.heatmaps = {}
            for i, name in enumerate(self.matrices):
                yield
                self.heatmaps[name] = self._new_heatmap(name, i)
            yield                               # the plots laid out in a turn of their own
            self.maps.hold([heatmap.plot for heatmap in self.heatmaps.values()])
        self._link_rows()
        reframe, self._framed_kind = self.attention_view.kind != self._framed_kind, self.attention_view.kind
        if build:
            yield                               # the row labels made in a turn of their own
        labels = self._row_labels()
        for rows in _distinct(labels.values()):     # Q, K and V share theirs: made and measured once
            yield from measuring(rows)
        for name, matrix in self.matrices.items():
            yield
            self.heatmaps[name].set_matrix(matrix, self._levels(name, matrix), labels[name],
                                           [str(i) for i in range(matrix.shape[1])], keep_view=not reframe)

    def _row_labels(self) -> dict[str, list[str]]:
        """Per matrix: its numbered row labels, one list for the matrices of the same tokens (Q, K and V
        but in cross-attention), made only for the tokens new since the last drawing (GrowingLabels)."""
        texts = self._row_texts()
        return {name: self._labels[name.startswith("Q") or not self.attention_view.cross](
                    texts[name][: len(matrix)], numbered=True)
                for name, matrix in self.matrices.items()}

    def _new_heatmap(self, name: str, col: int) -> Heatmap:
        # Each its own colour bar: V is often ten times smaller than Q and K, and on their scale looks blank.
        heatmap = Heatmap(self.view.ci, row=0, col=col, colorbar=True, colormap="CET-D1", axes=("left", "bottom"))
        heatmap.plot.setTitle(name, size=TITLE)
        heatmap.on_click = lambda row, col: self._click(name, row)
        heatmap.on_hover = lambda row, col: self._hover(name, row, col)
        return heatmap

    def _link_rows(self) -> None:
        """Matrices whose rows are the same tokens scroll together; cross-attention's Q (target rows) and
        K, V (source rows) each keep their own rows."""
        view = self.attention_view
        self.row_text.update(self._row_texts())
        self.row_link.set_plots([] if view.cross else [heatmap.plot for heatmap in self.heatmaps.values()])

    def _row_texts(self) -> dict[str, tuple[str, ...]]:
        """Per matrix: the token of each row (cross-attention's K and V: the source's)."""
        view = self.attention_view
        return {name: view.column_text() if view.cross and not name.startswith("Q") else view.row_text()
                for name in self.matrices}

    def _click(self, name: str, row: int) -> None:
        view = self.attention_view
        if view is not None and (view.kind == "self" or (view.cross and name.startswith("Q"))):
            self.select(token=row)

    def _describe(self, trace, selection: Selection) -> None:
        h, kv = selection.head, trace.kv_head_of(selection.head)
        shapes = {name: m.shape for name, m in self.matrices.items()}
        q, k, v = (shapes[f"Q_{h}"], shapes[f"K_{kv}"], shapes[f"V_{kv}"])
        formula = (f"Q_{h} = X W_{h}^Q ∈ {dims(*q)},  K_{kv} = X W_{kv}^K ∈ {dims(*k)},"
                   f"  V_{kv} = X W_{kv}^V ∈ {dims(*v)}")
        view = self.attention_view
        if view.cross:
            formula = (f"cross-attention: Q_{h} = X^Q W_{h}^Q ∈ {dims(*q)} with X^Q the decoder (target),"
                       f"  K_{kv} = C W_{kv}^K ∈ {dims(*k)},  V_{kv} = C W_{kv}^V ∈ {dims(*v)} with"
                       f" X^K = X^V = C the encoder output (source), computed once")
        elif view.kind == "encoder" or (view.kind == "self" and self.trace.model.is_encoder_decoder):
            formula = f"{'encoder' if view.kind == 'encoder' else 'decoder'} self-attention: {formula}"
        if "c_KV" in shapes:
            formula += f",  c_KV = X W^{{DKV}} ∈ {dims(*shapes['c_KV'])}"
        if "k_R" in shapes:
            formula += f",  k_R = RoPE(X W^{{KR}}) ∈ {dims(*shapes['k_R'])}"
        self.set_formula(formula + f"   (layer {selection.layer})")
        sharing = trace.query_heads_of(kv)
        model = trace.model
        if model.attention in ("gqa", "mqa"):
            self.sharing.set_plain(f"{model.attention.upper()}: K/V head {kv} is shared by query heads "
                                 + ", ".join(str(x) for x in sharing))
        elif model.attention == "mla":
            self.sharing.set_plain("MLA: K and V of every head are expanded from the shared latent c_KV")
        else:
            self.sharing.set_plain(f"MHA: head {h} has its own K and V")

    def _hover(self, name: str, row, col) -> None:
        if row is None or name not in self.matrices:
            return
        text = self.row_text[name][row] if row < len(self.row_text.get(name, ())) else ""
        self.readout.setText(f"{name}[{row}, {col}] = {self.matrices[name][row, col]:.6g}"
                             f"   token ‘{visible_text(text)}’")

    # ----- projection weights, on request ---------------------------------------------------
    def _on_weights_toggled(self, on: bool) -> None:
        self.weight_grid.setVisible(on)
        if on:
            height = max(2, self.splitter.height())
            self.splitter.setSizes([height // 2, height - height // 2])
        if on and not self._updating:
            self._request_weights(self.session.selection)

    def _request_weights(self, selection: Selection) -> bool:
        """Ask the model thread for this head's weights, once per (model, layer, head)."""
        trace = self.trace
        if not self.weights_box.isChecked() or trace is None or self.weights_call.running:
            return False
        if self.executor is None and self.session.model is None:
            return False
        key = (trace.model.name, selection.layer, selection.head)
        if key == self._weights_key:
            return False
        self._weights_key = key
        layer, head = selection.layer, selection.head
        job = HeadWeightsJob(layer, head)                   # run by core_api on the model thread
        self.readout.setText(f"reading the weights of layer {layer}, head {head}…")
        return self.weights_call.start(job, self.executor or self.session.requests.model_job_requested.emit)

    def _on_weights_ready(self, weights) -> None:
        self.weights = weights
        names = list(weights.matrices)
        if list(self.weight_maps) != names:
            self.weight_grid.clear()
            self.weight_maps = {name: Heatmap(self.weights_view.ci, row=0, col=i, colorbar=True,
                                              colormap="CET-D1", axes=("left", "bottom"))
                                for i, name in enumerate(names)}
            self.weight_grid.hold([heatmap.plot for heatmap in self.weight_maps.values()])
        for name, matrix in weights.matrices.items():
            heatmap = self.weight_maps[name]
            heatmap.set_matrix(matrix, symmetric_levels(matrix))
            heatmap.plot.setTitle(formula_html(f"{name} ∈ {dims(*matrix.shape)}"), size=TITLE)
            heatmap.on_hover = lambda row, col, name=name: self._hover_weight(name, row, col)
        shared = ", ".join(str(h) for h in weights.shared_by)
        self.readout.setText(f"weights of layer {weights.layer}, head {weights.head}"
                             + (f"; K/V head {weights.kv_head} is read by query heads {shared}"
                                if weights.kv_head is not None else "; W^DKV and W^KR are shared by every head"))
        self._request_weights(self.session.selection)          # in case the selection moved on meanwhile

    def _on_weights_failed(self, message: str) -> None:
        self._weights_key = None
        self.error_line.show_error(message)

    def _hover_weight(self, name: str, row, col) -> None:
        if row is not None and self.weights is not None and name in self.weights.matrices:
            self.readout.setText(f"{name}[{row}, {col}] = {self.weights.matrices[name][row, col]:.6g}")
