"""The KV cache panel's occupancy plots: KiB per layer (in use over allocated, the cross-attention K/V
beside them) and KiB in use in all layers against the tokens held, one point per step.

The plots' items are made once and given new data at each step (`setOpts`, `setData`), never cleared
and built again: at 8,000 tokens a redraw that rebuilt them, with a token axis ticked every token of a
prefill-to-now span of a few tokens across 0..8,000, took 130 ms. The token axis is ticked over the
range it shows, from 0, about five labels whatever the length, and the curve is drawn reduced to the
view's pixels (pyqtgraph's peak downsampling), its markers shown only while steps are few. The two plots may
be built a piece a turn of the event loop (`building`): a tab's first raise then holds the window for one PlotItem
at a time, or one plot's items, not for both and their first drawing. The per-layer plot's title is worded to its
width (`title_layers`): cut where it ran out of room, it read "KiB per layer in use (allocated:…" at 1366x768.
"""
from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, QTimer

from explorer.app.widgets.plot_text import fitting_title
from explorer.drawing.label_thinning import nice_step

KIB = 1024.0
MIN_PLOT_PX = 120            # the least a plot's view may have, wide and high, to be read
WHOLE_TICKS = 12            # up to this many layers, a tick at every layer
MIN_VIEW_PX = MIN_PLOT_PX + 56   # and its figure, with the title and the tick labels
TOKEN_TICKS = 5              # about this many labels on the token axis
MARKED_STEPS = 200           # a marker per step up to this many steps; beyond, they merge into the line
IN_USE, ALLOCATED, SELECTED, CROSS = "#3b7dd8", "#9aa0a6", "#ffb000", "#b07cd8"
STEP_COLOUR = "#ff2d55"


def token_tick_spacing(last_token: float) -> float:
    """Whole tokens (never 5.5) between labels of an axis drawn from 0 to `last_token`: about TOKEN_TICKS
    labels. (Spaced over the prefill-to-now span, 8 tokens at a prefill of 7,992, it put 4,000 labels on it.)"""
    return nice_step(float(last_token) / TOKEN_TICKS)


class OccupancyPlots(pg.GraphicsLayoutWidget):
    """The two occupancy plots, KiB per layer and KiB in use against tokens: side by side where the figure
    is wider than high, one above the other where it is not. Side by side in the narrow column left beside
    the Learn path at 1366x768, the second plot lay past the figure's right edge, out of sight."""

    def __init__(self, built: bool = True) -> None:
        """`built` False: the plots are built later, one a turn, by `building` (a tab's first raise)."""
        super().__init__()
        self.setMinimumSize(2 * MIN_PLOT_PX, MIN_VIEW_PX)
        self.wide = True
        self._layer_wordings: tuple[str, ...] = ()
        self._worded: tuple | None = None           # (width, wordings) the layer plot's title was last worded for
        self.layer_plot: pg.PlotItem | None = None
        self.total_plot: pg.PlotItem | None = None
        self.in_use_bars: pg.BarGraphItem | None = None      # each plot's items, made the turn after it (building)
        self.total_curve: pg.PlotDataItem | None = None
        if built:
            for _ in self.building():
                pass

    @property
    def built(self) -> bool:
        return self.total_curve is not None

    def building(self) -> Iterator[pg.PlotItem | None]:
        """Build the plots still to build, a piece a turn: each PlotItem with its axes, view and menus (10-16 ms of GUI
        work at its first, made alone: with its items the total plot's turn was 21-28 ms), yielding None after it; then
        the items it will hold, made once, empty and hidden until `draw_layers` / `draw_totals` gives them data,
        yielding the plot (complete: the caller's to dress) after them."""
        if self.layer_plot is None:
            self.layer_plot = self._plot(0, "KiB per layer: in use / allocated")
            self.layer_plot.titleLabel.geometryChanged.connect(self._word_layer_title)
            if self._layer_wordings:
                self._word_layer_title()
            yield None
        if self.in_use_bars is None:
            self._add_bars()
            yield self.layer_plot
        if self.total_plot is None:
            self.total_plot = self._plot(1, "KiB in use, all layers")
            yield None
        if self.total_curve is None:
            self._add_curves()
            yield self.total_plot

    def _add_bars(self) -> None:
        """The per-layer plot's bars: allocated (outlined), in use, the cross-attention K/V."""
        empty = dict(x=np.zeros(1), height=np.zeros(1), width=0.7)
        self.allocated_bars = pg.BarGraphItem(**empty, pen=pg.mkPen(ALLOCATED), brush=None)
        self.cross_bars = pg.BarGraphItem(**empty, brush=CROSS)
        in_use_bars = pg.BarGraphItem(**empty, brush=IN_USE)
        for bars in (self.allocated_bars, in_use_bars, self.cross_bars):
            bars.setVisible(False)
            self.layer_plot.addItem(bars)
        self.in_use_bars = in_use_bars            # last: the bars are made once all are in the plot

    def _add_curves(self) -> None:
        """The plot against tokens' items: the step's line and dot, the curve in use, the cross-attention K/V."""
        self.step_line = pg.InfiniteLine(angle=90, pen=pg.mkPen(STEP_COLOUR, width=2))
        self.cross_curve = pg.PlotDataItem(pen=pg.mkPen(CROSS, width=2, style=Qt.PenStyle.DashLine))
        total_curve = pg.PlotDataItem(pen=IN_USE, symbolSize=5)
        total_curve.setDownsampling(auto=True, method="peak")     # no more vertices than the view has pixels
        total_curve.setClipToView(True)
        self.step_dot = pg.PlotDataItem(pen=None, symbol="o", symbolSize=11, symbolBrush=STEP_COLOUR)
        for item in (self.step_line, self.cross_curve, total_curve, self.step_dot):
            item.setVisible(False)
            self.total_plot.addItem(item)
        self.total_curve = total_curve            # last: `built` once every item is in the plot

    def _plot(self, index: int, title: str) -> pg.PlotItem:
        """The `index`-th plot (0: per layer, 1: against tokens) in its place, side by side or stacked."""
        plot = self.addPlot(row=0 if self.wide else index, col=index if self.wide else 0)
        fitting_title(plot)
        plot.setTitle(title)
        self._share()
        return plot

    def title_layers(self, *wordings: str) -> None:
        """Title the per-layer plot with the first of `wordings` (longest first) that its width shows whole, the
        first in its tooltip: shortened on purpose, never cut mid-word (only the last is cut, where even it
        cannot be read whole)."""
        self._layer_wordings, self._worded = wordings, None
        if self.layer_plot is not None:
            self._word_layer_title()

    def _word_layer_title(self) -> None:
        title = self.layer_plot.titleLabel
        key = (title.width(), self._layer_wordings)
        if not self._layer_wordings or key == self._worded:
            return
        self._worded = key
        for text in self._layer_wordings:
            self.layer_plot.setTitle(text)
            if title.item.toPlainText() == text:
                break
        title.setToolTip(self._layer_wordings[0])

    def _share(self) -> None:
        """An equal share of the width, or of the height; an empty row or column would take a share too."""
        grid = self.ci.layout
        grid.setColumnStretchFactor(0, 1)
        grid.setColumnStretchFactor(1, int(self.wide))
        grid.setRowStretchFactor(0, 1)
        grid.setRowStretchFactor(1, int(not self.wide))

    def draw_layers(self, in_use: np.ndarray, allocated: np.ndarray | None, cross: np.ndarray, layer: int) -> None:
        """Bars of bytes per layer, as KiB: in use (`layer`'s marked), allocated behind them unless None
        (off scale), and the fixed cross-attention K/V beside them where `cross` has any."""
        crossed = bool(cross.any())
        # Layers are whole numbers: left to pyqtgraph, the translator's 3 layers were ticked 0, 0.5, 1, 1.5, 2
        axis = self.layer_plot.getAxis("bottom")
        if len(in_use) <= WHOLE_TICKS:
            axis.setTickSpacing(1, 1)
        else:
            axis.setTickSpacing()                   # pyqtgraph's own (whole numbers at many layers)
        layers = np.arange(len(in_use)) - (0.2 if crossed else 0.0)
        width = 0.4 if crossed else 0.7
        if allocated is not None:
            self.allocated_bars.setOpts(x=layers, height=allocated / KIB, width=width)
        self.allocated_bars.setVisible(allocated is not None)
        brushes = [SELECTED if i == layer else IN_USE for i in range(len(in_use))]
        self.in_use_bars.setOpts(x=layers, height=in_use / KIB, width=width, brushes=brushes)
        self.in_use_bars.setVisible(True)
        if crossed:
            self.cross_bars.setOpts(x=np.arange(len(cross)) + 0.2, height=cross / KIB, width=0.4)
        self.cross_bars.setVisible(crossed)

    def draw_totals(self, tokens: np.ndarray, totals: np.ndarray, step: int, cross_total: float) -> None:
        """KiB in use in all layers (`totals`, bytes) against `tokens` held after each step, `step` marked;
        the fixed cross-attention K/V (`cross_total` bytes; 0: none) as a dashed line."""
        kib = totals / KIB
        self.total_curve.setSymbol("o" if len(tokens) <= MARKED_STEPS else None)
        self.total_curve.setData(tokens, kib)
        self.step_dot.setData([tokens[step]], [kib[step]])
        self.step_line.setValue(float(tokens[step]))
        if cross_total:
            self.cross_curve.setData(tokens, np.full(len(tokens), cross_total / KIB))
        self.cross_curve.setVisible(bool(cross_total))
        for item in (self.total_curve, self.step_dot, self.step_line):
            item.setVisible(True)
        # from zero: bytes in use against tokens held, so a single prefill point is not a range of zero
        # height (its ticks all read the same number) and a few steps do not look like a steep rise
        right = float(tokens[-1]) * 1.02 + 1.0
        self.total_plot.setRange(xRange=(0.0, right), yRange=(0.0, max(float(kib.max()), 1.0) * 1.05), padding=0)
        spacing = token_tick_spacing(right)
        self.total_plot.getAxis("bottom").setTickSpacing(spacing, spacing)

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        if getattr(self, "wide", None) not in (None, self._wide_fits()):     # (None: pyqtgraph building it)
            # after the resize: items taken out of the scene's layout while Qt lays the dock out crashed it
            QTimer.singleShot(0, self, self._place)

    def _wide_fits(self) -> bool:
        """Side by side gives each plot half the width, stacked half the height: the smaller side of the
        smaller plot is the larger side by side where the figure is at least as wide as it is high."""
        return self.width() >= self.height()

    def _place(self) -> None:
        wide = self._wide_fits()
        if wide == self.wide:
            return
        self.wide = wide
        grid = self.ci.layout            # moved in Qt's grid only: out of the scene, a plot's view lost its items
        for index, plot in enumerate((self.layer_plot, self.total_plot)):
            if plot is None:
                continue                 # built later in its place (building)
            grid.removeItem(plot)
            grid.addItem(plot, 0 if wide else index, index if wide else 0)
        self._share()
