"""Embeddings: the rows E[id] of the embedding matrix (tokens × d_model) with their norms,
learned positional embeddings where the model has them, and for RoPE models the
rotation angle θ_i · pos of every frequency pair at every position.

The rows are kept from step to step (StackedRows): a decoding step adds one. Past MAX_BARS tokens the
norms are drawn as one bar per block of rows, the block's largest ‖row‖₂.
"""
from __future__ import annotations

import functools
import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QSizePolicy

from explorer.app.panels.base import LABELS_A_TURN, LONG_ROWS, Panel, dims, measuring
from explorer.app.state.session import Selection
from explorer.app.widgets.plot_text import TITLE, fitting_title
from explorer.app.widgets.stacked_rows import StackedRows
from explorer.app.widgets.token_labels import GrowingLabels
from explorer.drawing.heatmap import Heatmap
from explorer.drawing.heatmap_axes import unmeasured

VIEWS = {
    "tokens": "token embeddings E[id]",
    "positions": "positional embeddings P[pos]",
    "rope": "RoPE angles θ_i · pos",
}
TITLES = {
    "tokens": "rows E[id] (token × d_model)",
    "positions": "rows P[pos] (position × d_model)",
    "rope": "angles pos · θ_i mod 2π (position × frequency pair i)",
}
# The bars' titles: the norms of the rows as the matrix stores them. A model may scale them as they enter the
# residual stream (Gemma: h_0 = E[ids] * sqrt(d_model), 25.3 for Gemma 3 270M); the bars do not.
NORM_TITLES = {"tokens": "‖E[id]‖₂ unscaled", "positions": "‖P[pos]‖₂"}
MAX_BARS = 256              # norm bars drawn at most: a longer prompt's are block maxima, unoutlined
OUTLINED_PX = 4             # a bar is outlined where a row is this tall on screen: 256 bars 1.5 px apart, each
                            # outlined, drew a black mass over the blue (drive21 m15)


@functools.lru_cache(maxsize=8)
def column_labels(n: int) -> tuple[str, ...]:
    """'0', '1', …: the d_model components (or frequency pairs) across the map."""
    return tuple(str(i) for i in range(n))


class EmbeddingsPanel(Panel):
    title = "Embeddings"
    object_name = "embeddings"

    def __init__(self, session, parent=None) -> None:
        super().__init__(session, parent)
        controls = QHBoxLayout()
        self.view_box = QComboBox()
        # As wide as its longest choice, never cut ("RoPE anç"): the stretch beside it gives way instead.
        self.view_box.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.view_box.setSizePolicy(QSizePolicy.Policy.Minimum, QSizePolicy.Policy.Fixed)
        controls.addWidget(QLabel("show"))
        controls.addWidget(self.view_box)
        controls.addStretch(1)
        self.body.addLayout(controls)
        self.view = pg.GraphicsLayoutWidget()
        self.heatmap = Heatmap(self.view.ci, row=0, col=0, colormap="CET-D1", axes=("left", "bottom"))
        self.norm_plot = self.view.addPlot(row=0, col=2)
        fitting_title(self.norm_plot)
        self._norm_title = NORM_TITLES["tokens"]
        self.norm_plot.setTitle(self._norm_title, size=TITLE)
        # The same title height over both plots keeps their linked rows level (else row 0 of the bars is cut off).
        self.heatmap.plot.setTitle(TITLES["tokens"], size=TITLE)
        self.norm_plot.invertY(True)
        self.norm_plot.hideAxis("left")             # its rows are the heatmap's, labelled on its left
        self.norm_plot.setYLink(self.heatmap.plot)
        self.rows_per_bar = 1
        self.norm_plot.getViewBox().sigResized.connect(self._outline_bars)
        self.norm_plot.getViewBox().sigYRangeChanged.connect(self._outline_bars)
        self.norm_plot.setMaximumWidth(160)
        self.body.addWidget(self.view, 1)
        self.heatmap.on_hover = self._hover
        self.heatmap.on_click = lambda row, col: self.select(token=row)
        self.view_box.currentIndexChanged.connect(lambda _: None if self._updating else self.refresh())
        self.add_to_plot_menu(self.heatmap.plot)
        self.matrix: np.ndarray | None = None
        self.norm_bars: pg.BarGraphItem | None = None
        self.stacks = {"tokens": StackedRows(lambda step: step.embeddings),
                       "positions": StackedRows(lambda step: step.pos_embeddings)}
        self.row_labels = GrowingLabels()                 # a step adds one row's label to the ones made

    def current_view(self) -> str:
        return self.view_box.currentData() or "tokens"

    def redraw(self) -> None:
        trace = self.trace
        if trace is None or not trace.steps:
            self.matrix = None
            self.heatmap.set_matrix(np.zeros((0, 0)))
            self.set_formula("X_0 = E[ids]")
            return
        available = ["tokens"]
        if trace.steps[0].pos_embeddings is not None:
            available.append("positions")
        if trace.rope_inv_freq is not None and trace.model.positional == "rope":
            available.append("rope")
        current = self.current_view()
        if available != [self.view_box.itemData(i) for i in range(self.view_box.count())]:
            self.view_box.clear()
            for name in available:
                self.view_box.addItem(VIEWS[name], name)
            self.view_box.setCurrentIndex(available.index(current) if current in available else 0)
        self._draw(trace, self.current_view())

    def _draw(self, trace, view: str) -> None:
        """Draw the map and its norms: at once, or, when the panel comes into sight with a long trace whose rows
        it must stack or label anew, in parts over several turns of the event loop (stacking 8,000 rows, making
        and measuring their labels, the map's first data and the norms' bars held the window ~90 ms in one)."""
        stack = self.stacks.get(view)
        in_turns = self.raising and trace.n_tokens >= LONG_ROWS and (          # (not a step's one new row)
            self.heatmap.colorbar is None or (stack is not None and stack.pending(trace.steps) >= LONG_ROWS)
            or unmeasured(self.row_labels(trace.token_text, numbered=True)) >= LABELS_A_TURN)
        self.draw_in_parts(self._draw_parts(trace, view), in_turns)

    def _draw_parts(self, trace, view: str):
        """The drawing, a part between yields (draw_in_parts): the rows stacked, their labels made, then measured
        a share at a time, the map drawn, the norms drawn, and the first paint in a turn of its own."""
        self.view.setUpdatesEnabled(False)
        try:
            yield from self._draw_map(trace, view)
            yield                                   # the map's first paint in a turn of its own
        finally:
            self.view.setUpdatesEnabled(True)

    def _draw_map(self, trace, view: str):
        yield                                       # the rows stacked in a turn of their own
        T = trace.n_tokens
        if view == "rope":
            positions = np.arange(T, dtype=np.float64)[:, None]                  # (T, 1)
            matrix = np.mod(positions * trace.rope_inv_freq[None, :], 2 * np.pi)  # (T, d_qk/2)
            levels = (0.0, 2 * np.pi)
            formula = f"angle_{{pos,i}} = pos · θ_i mod 2π,  θ_i = base^{{−2i/d}} ∈ {dims(*matrix.shape)}"
        else:
            stack = self.stacks[view]
            matrix = yield from stack.stack_in_parts(trace.steps, LABELS_A_TURN)
            levels = stack.levels()
            symbol = "E[ids]" if view == "tokens" else "P[pos]"
            positional = " + P[pos]" if trace.steps[0].pos_embeddings is not None and view == "tokens" else ""
            formula = f"X_0 = E[ids]{positional},  {symbol} ∈ {dims(*matrix.shape)}"
        self.set_formula(formula)
        yield                                       # the row labels made in a turn of their own
        labels = self.row_labels(trace.token_text, numbered=True)
        yield from measuring(labels)
        yield
        self.matrix = matrix
        self.heatmap.set_colormap("CET-C1" if view == "rope" else "CET-D1")
        self.heatmap.plot.setTitle(TITLES[view], size=TITLE)
        self.heatmap.set_matrix(matrix, levels, labels, column_labels(matrix.shape[1]), keep_view=True)
        self._show_norms(view != "rope")        # an angle has no norm: the bars go, the map takes their room
        if view != "rope":
            yield
            if self._norm_title != NORM_TITLES[view]:            # a new title lays the plot out again
                self._norm_title = NORM_TITLES[view]
                self.norm_plot.setTitle(self._norm_title, size=TITLE)
            self._draw_norms(self.stacks[view].norms)

    def _show_norms(self, shown: bool) -> None:
        """Put the ‖row‖₂ plot beside the map, or take it out of the layout."""
        layout = self.view.ci
        if shown and self.norm_plot not in layout.items:
            layout.addItem(self.norm_plot, row=0, col=2)
        elif not shown and self.norm_plot in layout.items:
            layout.removeItem(self.norm_plot)
        self.norm_plot.setVisible(shown)

    def _draw_norms(self, norms: np.ndarray) -> None:
        """One bar per row, or past MAX_BARS rows one per block of f rows: the block's largest norm."""
        f = max(1, math.ceil(len(norms) / MAX_BARS))
        padded = np.zeros(math.ceil(len(norms) / f) * f, dtype=np.float32)
        padded[: len(norms)] = norms
        widths = padded.reshape(-1, f).max(axis=1)
        rows = np.arange(len(widths)) * f + (f - 1) / 2              # the block's centre, in rows
        # Blocks touch (no gaps, no outline): outlines of hundreds of thin bars drew a black mass.
        self.rows_per_bar = f
        shape = dict(height=0.8, pen=self._bar_pen()) if f == 1 else dict(height=f, pen=None)
        if self.norm_bars is None:
            self.norm_bars = pg.BarGraphItem(x0=0, y=rows, width=widths, brush="#3b7dd8", **shape)
            self.norm_plot.addItem(self.norm_bars)
        else:
            self.norm_bars.setOpts(y=rows, width=widths, **shape)

    def _bar_pen(self):
        """The bars' outline: the foreground's where a row is OUTLINED_PX tall in the view, else none."""
        view = self.norm_plot.getViewBox()
        low, high = view.viewRange()[1]
        return pg.getConfigOption("foreground") if view.height() >= OUTLINED_PX * max(high - low, 1.0) else None

    def _outline_bars(self, *_) -> None:
        """The bars outlined anew as the view's rows grow or shrink on screen (a resize, a zoom)."""
        if getattr(self, "norm_bars", None) is not None and self.rows_per_bar == 1:
            pen = self._bar_pen()
            if (pen is None) != (self.norm_bars.opts["pen"] is None):
                self.norm_bars.setOpts(pen=pen)

    def show_selection(self, selection: Selection) -> None:
        self.heatmap.highlight(selection.token, None)

    def _hover(self, row, col) -> None:
        if row is None or self.matrix is None:
            return
        text = self.trace.token_text[row]
        if self.current_view() == "rope":
            self.readout.setText(f"position {row} {text!r}, pair {col}: angle {self.matrix[row, col]:.6g} rad")
            return
        self.readout.setText(f"position {row} {text!r}, component {col}: {self.matrix[row, col]:.6g}   "
                             f"‖row‖₂ = {np.linalg.norm(self.matrix[row]):.4g} (as stored, unscaled)")
