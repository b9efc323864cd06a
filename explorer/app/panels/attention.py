"""Attention: one head large, and every head of every layer as a grid of small multiples.

A = softmax(Q_h K_hᵀ · scale) with the mask applied; the toggle shows the
pre-softmax scores S instead. Masked cells are drawn transparent, so "zero
because masked" and "almost zero" look different. With an encoder-decoder the
panel offers the encoder's self-attention, the decoder's masked self-attention
and the cross-attention (target rows × source columns), see trace_views.
A long prompt's maps (rebuilt on demand from Q and K) are computed off the GUI thread:
the large map as block maxima over its real extent (long_head), the grid head by head
with its progress and Cancel (grid_filler).
"""
from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent, Qt, QTimer
from PySide6.QtGui import QAction, QGuiApplication
from PySide6.QtWidgets import QCheckBox, QComboBox, QHBoxLayout, QLabel, QSpinBox, QSplitter, QVBoxLayout, QWidget

from explorer.app.panels.attention_header import WEIGHTS, header
from explorer.app.panels.base import Panel, visible_text
from explorer.app.state.session import Selection
from explorer.app.widgets.ablation_marks import AblationMarks, ablated_heads
from explorer.app.widgets.attention_exports import export_actions, offer_steps
from explorer.app.widgets.attention_kind import AttentionKindBox
from explorer.app.widgets.flow_layout import FlowLayout
from explorer.app.widgets.grid_filler import GridFiller, GridProgress
from explorer.app.widgets.kernel_control import KernelControl
from explorer.app.widgets.kv_occupancy import MIN_PLOT_PX
from explorer.app.widgets.long_export import LongExport
from explorer.app.widgets.long_head import LongHead, Request
from explorer.app.widgets.map_grid import TileScroll
from explorer.core.intervention import HeadAblation, Intervention
from explorer.drawing.grid_legend import GridLegend
from explorer.drawing.heatmap import Heatmap
from explorer.views import trace_views
from explorer.views.grid import Mosaic, mosaic
from explorer.views.long_maps import extent, is_long
from explorer.views.maps import attention_matrix, axis_labels, head_levels, mean_attention_matrix

STALE_OPACITY = 0.35      # the grid of the step before, drawn while the new step's tiles are computed
GRID_SHARE = 0.4         # of the splitter beside the large map, the head grid's share
GRID_MOST = 0.45         # ... and the most it takes for its heads to wrap (_share_split)


class AttentionPanel(Panel):
    title = "Attention"
    object_name = "attention"
    gestures = (("Alt+click a head in the grid", "Ablate that head (an experiment)"),     # Help's shortcut list
                ("Wheel over the grid", "Scroll the grid, where its tiles do not fit"),
                ("Ctrl+wheel over the grid", "Zoom the grid"))

    def __init__(self, session, parent=None) -> None:
        super().__init__(session, parent)
        self.body.addWidget(self._controls())
        self.body.addWidget(self._maps(), 1)
        self._connect()
        self.matrix: np.ndarray | None = None
        self.view: trace_views.View | None = None          # the attention drawn: its trace, step, kind
        self.mosaic: Mosaic | None = None
        self._drawn_large = None
        self._drawn_grid = None
        self._revealed_tile = None                         # (kind, layer, head or None: the mean) scrolled to

    def _controls(self) -> QWidget:
        """Layer, head, weights or scores, colour scale, the mean, which attention, and the kernel f_κ."""
        row = QWidget()
        controls = FlowLayout(row)        # wraps in a narrow dock instead of widening the window
        self.layer_box, self.head_box = QSpinBox(), QSpinBox()
        self.values_box, self.scale_box = QComboBox(), QComboBox()
        self.values_box.addItems(["weights A", "scores S"])
        self.scale_box.addItems(["linear", "log"])
        for label, widget in (("layer", self.layer_box), ("head", self.head_box),
                              ("show", self.values_box), ("colour", self.scale_box)):
            controls.addWidget(QLabel(label))
            controls.addWidget(widget)
        self.mean_box = QCheckBox("mean of heads")
        self.mean_box.setToolTip("Ā = (1/N_Q) Σ_h A_h: the layer's heads averaged, in place of one head")
        controls.addWidget(self.mean_box)
        self.kind_box = AttentionKindBox(self)
        controls.addWidget(self.kind_box)
        self.kernel_control = KernelControl(self.session, self)      # f_κ of the selected layer: an experiment
        controls.addWidget(self.kernel_control)
        return row

    def _maps(self) -> QSplitter:
        """The large map beside the grid of every head (its progress above it, its colour bars beside it)."""
        self.large_view = pg.GraphicsLayoutWidget()
        self.grid_view = pg.GraphicsLayoutWidget()
        self.large = Heatmap(self.large_view.ci)
        self.grid = Heatmap(self.grid_view.ci, axes=("left", "top"))
        self.grid_scroll = TileScroll(self.grid_view)     # scrolls rather than squash the tiles
        self.legend_view = pg.GraphicsLayoutWidget()      # the grid's colour bars, in sight however it scrolls
        self.grid_legend = GridLegend(self.grid, self.legend_view.ci)   # a scale per kind of layer, bars labelled
        self._axis_names = ("query", "key")
        self.large.plot.setLabels(**dict(zip(("left", "top"), self._axis_names)))
        # A long trace's grid fills in the background (its progress and Cancel above it), and its large
        # map is drawn as block maxima computed off the GUI thread, exact on hover and zoomed in.
        self.filler = GridFiller(self)
        self.grid_progress = GridProgress(self.filler)
        self.long_head = LongHead(self.large, self.filler.pause, self)
        self.long_export = LongExport(self.long_head.maps, self.filler.pause, self,   # off the GUI thread
                                      tiles=self.filler.tiles)
        self.grid_progress.follow(self.long_export)
        grid_box = QWidget()
        grid_layout = QVBoxLayout(grid_box)
        grid_layout.setContentsMargins(0, 0, 0, 0)
        grid_layout.setSpacing(2)
        grid_layout.addWidget(self.grid_progress)
        grid_row = QHBoxLayout()
        grid_row.setContentsMargins(0, 0, 0, 0)
        grid_row.setSpacing(0)
        grid_row.addWidget(self.grid_scroll, 1)
        grid_row.addWidget(self.legend_view)
        grid_layout.addLayout(grid_row, 1)
        splitter = QSplitter(Qt.Orientation.Horizontal)
        splitter.addWidget(self.large_view)
        splitter.addWidget(grid_box)
        splitter.setSizes([round(1000 * (1 - GRID_SHARE)), round(1000 * GRID_SHARE)])   # before _share_split
        self.splitter, self._split_by_hand = splitter, False
        self._shares: dict[tuple, int] = {}                # (splitter width, layers, heads, font) -> the grid's width
        return splitter

    def _connect(self) -> None:
        self.filler.repaint.connect(self._paint_grid)
        self.long_export.failed.connect(self.session.report_error)
        self.splitter.splitterMoved.connect(lambda *_: setattr(self, "_split_by_hand", True))   # kept as set
        self.splitter.installEventFilter(self)
        # after the splitter's own resize, which shares its new width out in the old proportions over a share
        # set in its Resize event (a shrink and regrow on a real X screen came back a px off, a taller grid)
        self._share_later = QTimer(self, singleShot=True, interval=0, timeout=self._share_split)
        self.large.on_hover = self._hover_large
        self.large.on_click = self._click_large
        self.grid.on_hover = self._hover_grid
        self.grid.on_click = self._click_grid
        self.grid_scroll.wrap_heads(self._on_wrap_changed)       # a layer's heads in rows the width holds
        self.layer_box.valueChanged.connect(lambda v: self.select(layer=v))
        self.head_box.valueChanged.connect(lambda v: self.select(head=v))
        self.values_box.currentIndexChanged.connect(self._on_toggle)
        self.scale_box.currentIndexChanged.connect(self._on_toggle)
        self.mean_box.toggled.connect(self._on_toggle)
        self.add_to_plot_menu(self.large.plot)
        self.add_to_plot_menu(self.grid.plot)
        self.ablation_marks = AblationMarks(self.grid.plot)      # the heads the experiments on ablate
        self.session.experiments_changed.connect(lambda _experiments: self._mark_ablations())

    def eventFilter(self, watched, event) -> bool:
        if watched is self.splitter and event.type() == QEvent.Type.Resize:
            self._share_later.start()
        return super().eventFilter(watched, event)

    def _share_split(self) -> None:
        """The grid GRID_SHARE of the splitter's width, or, up to GRID_MOST, the width at which its heads wrap
        (TileScroll.wrap_px) beside its colour bars: at 1366x768 beside Learn SmolLM2's grid had 167 px, 10 too few
        to wrap, and its nine heads a layer scrolled sideways in one row (issue 22). A split a person moved stays; the
        share is decided once for each width of the splitter and each grid's shape."""
        need = self.grid_scroll.wrap_px()
        total = sum(self.splitter.sizes())
        if self._split_by_hand or need is None or total <= 0 or self.mosaic is None:
            return
        # Decided once for each width and grid, and the same width given again on a return to it: at every
        # lay-out the share changed the grid's axes (their labels wrap with the heads), which changed the share
        # again (test_caption_fit's MLA grid never settled), and a shrink and regrow came back to another split.
        room = (total, self.mosaic.n_layers, self.mosaic.n_heads, self.grid_view.font().toString())   # Presentation
        grid = self._shares.get(room)
        if grid is None:
            # Two characters to spare: wrapped, the axes' labels take a few px more, and at the very width at
            # which the heads wrap the grid would wrap and unwrap in turn ...
            need += 2 * self.grid_scroll.fontMetrics().averageCharWidth()
            # ... and never at the large map's cost: it keeps a view of MIN_PLOT_PX beside its axes as laid out.
            large_axes = self.large_view.width() - self.large.plot.getViewBox().width()
            most = min(round(GRID_MOST * total), total - math.ceil(large_axes + MIN_PLOT_PX))
            grid = max(round(GRID_SHARE * total), min(need + self.legend_view.width(), most))
            if len(self._shares) > 512:                # a window dragged through every width
                self._shares.clear()
            self._shares[room] = grid
        if self.splitter.sizes()[1] != grid:            # to the px: a px more gives a taller grid of wrapped heads
            self.splitter.setSizes([total - grid, grid])

    # ----- settings the exports reuse ------------------------------------------------
    @property
    def values(self) -> str:
        return "scores" if self.values_box.currentIndex() == 1 else "weights"

    @property
    def mean_heads(self) -> bool:
        return self.mean_box.isChecked()

    @property
    def log_scale(self) -> bool:
        return self.scale_box.currentIndex() == 1 and self.values == "weights"

    @property
    def signed(self) -> bool:
        """Weights drawn linearly: a kernel other than exp can make some negative (Heatmap.set_matrix's signed)."""
        return self.values == "weights" and not self.log_scale

    @property
    def cross(self) -> bool:
        return self.kind == "cross"

    @property
    def kind(self) -> str:
        """"self", "cross" or "encoder": what the selection asks for, if the model has it."""
        return trace_views.kind_for(self.trace.model if self.trace else None, self.session.selection.attention)

    def current_view(self, selection: Selection | None = None) -> trace_views.View:
        s = selection or self.session.selection
        return trace_views.view(self.trace, s.attention, s.step)

    # ----- drawing ------------------------------------------------------------------
    def redraw(self) -> None:
        self._drawn_large = self._drawn_grid = None
        trace = self.trace
        if trace is None or not trace.steps:
            self.long_head.stop()
            self.filler.forget()
            self.grid_progress.begin()
            self.large.set_matrix(np.zeros((0, 0)))
            self.set_formula(WEIGHTS)
            return
        self.head_box.setRange(0, trace.model.n_heads - 1)

    def show_selection(self, selection: Selection) -> None:
        trace = self.trace
        if trace is None or not trace.steps:
            return
        self.view = view = self.current_view(selection)
        self.kind_box.show_kind(trace.model, view.kind)
        layer = min(selection.layer, view.n_layers - 1)
        self.layer_box.setRange(0, view.n_layers - 1)
        self.layer_box.setValue(layer)
        self.kernel_control.show_layer(layer, view.kind)
        self.head_box.setValue(selection.head)
        self.scale_box.setEnabled(self.values == "weights")
        self.head_box.setEnabled(not self.mean_heads)
        large_key = (layer, selection.head, selection.step, view.kind, self.values, self.log_scale, self.mean_heads)
        if large_key != self._drawn_large:
            self._draw_large(view, layer, selection.head)
            self._drawn_large = large_key
        grid_key = (selection.step, view.kind, self.values, self.log_scale)
        if grid_key != self._drawn_grid:
            self._draw_grid(view)
            self._drawn_grid = grid_key
        # `token` is a target token, `source` a source token: each is lit only on the axes that count it.
        rows, columns = {"self": (selection.token, selection.token), "cross": (selection.token, selection.source),
                         "encoder": (selection.source, selection.source)}[view.kind]
        self.large.highlight(rows, columns)
        self._outline_grid(selection, layer)
        tile = (view.kind, layer, None if self.mean_heads else selection.head)
        if tile != self._revealed_tile:      # a head chosen anywhere (the shared selection) scrolled into sight
            self._revealed_tile = tile
            self.grid_scroll.reveal(self.grid.tile_box)

    def _outline_grid(self, selection: Selection, layer: int) -> None:
        """Outline the selected head's tile in the grid (the layer's row of tiles for the mean)."""
        if self.mean_heads:
            self.grid.outline(*self.mosaic.layer_block(layer))
        else:
            self.grid.outline(*self.mosaic.tile_origin(layer, selection.head), *self.mosaic.tile_px)

    def _on_wrap_changed(self, _per_row) -> None:
        """The heads wrap anew (the room changed): the grid drawn so, the selected head outlined where it went."""
        if self.mosaic is not None and self.view is not None:
            self._paint_grid()
            selection = self.session.selection
            self._outline_grid(selection, min(selection.layer, self.view.n_layers - 1))

    def _draw_large(self, view: trace_views.View, layer: int, head: int) -> None:
        trace = view.trace
        self._name_axes(view.kind)                 # a long map too: it must not keep another kind's names
        if is_long(trace, view.step, view.cross):
            self._draw_long(view, layer, head)
            return
        self.long_head.stop()
        if self.mean_heads:
            matrix = mean_attention_matrix(trace, layer, view.step, self.values, view.cross)
        else:
            matrix = attention_matrix(trace, layer, head, view.step, self.values, view.cross)
        self.matrix = matrix
        shown, levels = head_levels(matrix, self.values, self.log_scale)
        rows, cols = axis_labels(trace, matrix.shape, view.cross)
        self.large.set_matrix(shown, levels, rows, cols, keep_view=True, signed=self.signed)
        self.set_formula(header(trace, view.kind, self.values, layer, head, matrix.shape, self.mean_heads))

    def _name_axes(self, kind: str) -> None:
        """query/key, or which side each comes from in an encoder-decoder's encoder and cross-attention."""
        labels = {"encoder": ("source query", "source key"), "cross": ("target query", "source key")}
        names = labels.get(kind, ("query", "key"))
        if names != self._axis_names:                    # setLabels lays both axes out again, even unchanged
            self.large.plot.setLabels(**dict(zip(("left", "top"), names)))
            self._axis_names = names

    def _draw_long(self, view: trace_views.View, layer: int, head: int) -> None:
        """A long map: drawn reduced once computed in the background; the header says its real size."""
        self.matrix = None
        heads = tuple(range(view.trace.model.n_heads)) if self.mean_heads else (head,)
        self.long_head.show(Request(view, layer, heads, self.values, self.log_scale))
        shape = extent(view.trace, view.step, view.cross, layer)
        self.set_formula(header(view.trace, view.kind, self.values, layer, head, shape, self.mean_heads))

    def _draw_grid(self, view: trace_views.View) -> None:
        if is_long(view.trace, view.step, view.cross):      # tile by tile in the background
            self.mosaic = self.filler.start(view.trace, view.step, view.cross, self.values)
            self.grid_progress.begin()
            self._paint_grid()
            return
        self.filler.forget()
        self.grid_progress.begin()
        self.mosaic = mosaic(view.trace, upto_step=view.step, cross=view.cross, values=self.values)
        self._paint_grid()

    def _paint_grid(self) -> None:
        shown = self.filler.shown
        if shown is not None and shown is not self.mosaic:     # a long grid's next step came in: draw it
            self.mosaic = shown
            if self.view is not None:
                selection = self.session.selection
                self._outline_grid(selection, min(selection.layer, self.view.n_layers - 1))
        if self.mosaic is None:
            return
        self.mosaic.wrap(self.grid_scroll.per_row)       # laid out as the scroll area wraps the heads
        scales = self.grid_legend.show(self.mosaic, self.values, self.log_scale)
        self.grid_legend.set_opacity(STALE_OPACITY if self.filler.updating else 1.0)   # the previous step's, dimmed
        mosaic = self.mosaic
        self.grid_scroll.fit_tiles(self.grid.plot, (mosaic.n_layers, mosaic.n_heads), mosaic.tile_shape)
        self.grid_scroll.fit_beside(self.legend_view, tuple(scale.label for scale in scales))
        # Its axes measured: the width at which the heads wrap, shared out once control is back in the event loop.
        # Here it may run inside the grid row's layout pass (the scroll area resized, its heads wrapped anew): a
        # split changed then laid the row out anew inside that pass, whose own placing of the colour bars came
        # after, stale, over the grid's scroll bar (a shrink and regrow at 1366x768, drive27).
        self._share_later.start()
        self._mark_ablations()

    def _mark_ablations(self) -> None:
        """A dashed cross over the tile of every head an experiment that is on ablates."""
        mosaic, view = self.mosaic, self.view
        if mosaic is None or view is None:
            self.ablation_marks.show([])
            return
        heads = [(l, h) for l, h in ablated_heads(self.session.experiments, view.kind)
                 if l < mosaic.n_layers and h < mosaic.n_heads]
        self.ablation_marks.show([mosaic.tile_origin(l, h) + tuple(mosaic.tile_px) for l, h in heads])

    def forget(self) -> None:
        """Nothing drawn from another model or run: its maps, the grid, the cell under the pointer."""
        self.matrix = self.view = self.mosaic = None
        self._drawn_large = self._drawn_grid = self._revealed_tile = None
        for heatmap in (self.large, self.grid):
            heatmap.clear()
            heatmap.plot.setTitle(None)              # no title row: a short map has none
        self.grid_legend.clear()
        self.ablation_marks.show([])

    # ----- pointer --------------------------------------------------------------------
    def _hover_large(self, row, col) -> None:
        if row is None or self.view is None or (self.matrix is None and not self.long_head.active):
            return
        rows, cols = self.view.row_text(), self.view.column_text()
        if row >= len(rows) or col >= len(cols):
            return
        value = self.long_head.cell(row, col) if self.matrix is None else self.matrix[row, col]
        symbol = "S" if self.values == "scores" else "A"
        shown = "masked" if not np.isfinite(value) else f"{value:.6g}"
        self.readout.setText(f"{symbol}[{row}, {col}] = {shown}    "
                             f"query {row} ‘{visible_text(rows[row])}’ → key {col} ‘{visible_text(cols[col])}’")

    def _hover_grid(self, row, col) -> None:
        tile = self.mosaic.tile_at(row, col) if (row is not None and self.mosaic) else None
        if tile is not None:
            waiting = " (not computed yet)" if np.isnan(self.mosaic.tile(*tile)).all() else ""
            self.readout.setText(f"layer {tile[0]}, head {tile[1]}{waiting} (click to open it large)")

    def _click_large(self, row: int, col: int) -> None:
        if self.view and self.view.kind == "encoder":           # rows and columns are source tokens
            self.select(source=row)
        elif self.view and self.view.kind == "cross":           # a target row, a source column
            self.select(token=row, source=col, key=col)
        elif self.view:
            self.select(token=row, key=col)

    def _click_grid(self, row, col) -> None:
        tile = self.mosaic.tile_at(row, col) if self.mosaic else None
        if tile is None:
            return
        if QGuiApplication.keyboardModifiers() & Qt.KeyboardModifier.AltModifier:
            self.session.add_experiment(Intervention(ablations=(HeadAblation(*tile),)))   # Alt-click: ablate
        else:
            self.mean_box.setChecked(False)              # a head clicked is that head, not the mean
            self.select(layer=tile[0], head=tile[1])

    def _on_toggle(self, _index) -> None:
        if not self._updating:
            self.refresh()

    # ----- export ------------------------------------------------------------------------
    def make_export_actions(self) -> list[QAction]:
        actions = export_actions(self)
        self.animate_action = actions[-1]            # every step as an animation: none for an encoder's one step
        offer_steps(self.animate_action, self.trace)
        self.session.trace_changed.connect(self._offer_animation)
        return actions

    def _offer_animation(self, trace) -> None:
        offer_steps(self.animate_action, trace)

    def say(self, text: str) -> None:
        """`text` on the window's status bar for a while (an export started or written)."""
        bar = getattr(self.window(), "statusBar", None)
        if callable(bar):
            bar().showMessage(text, 8000)
