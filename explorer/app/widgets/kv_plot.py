"""Bytes against tokens for every cache variant, up to the model's context, at float32, bfloat16 and 8-bit.

Three small multiples with one shared y axis, so the dtype's factor reads off as
a height and the variants' ratios as the gaps between curves (DeepSeek-V2,
Table 1, per token per layer: MHA 2·n_h·d_h, GQA 2·n_g·d_h, MQA 2·d_h,
MLA d_c + d_R). The model's own variant is the thick red curve in each. The shared y axis is read
on the first plot: the others' tick values repeated it and took ~40 px of width each.
"""
from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pyqtgraph as pg
import shiboken6
from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QPen

from explorer.app.widgets.plot_text import LEGEND, TITLE
from explorer.app.widgets.turns import Turns
from explorer.core import kv_variants as kv
from explorer.drawing import export
from explorer.drawing.colours import figure_colours
from explorer.drawing.figures import lay_out
from explorer.drawing.label_thinning import nice_step

DTYPES = ("float32", "bfloat16", "int8")
LEGEND_COLUMN_PX = 120     # the width one legend column needs
LEGEND_ROW_PX = 20
MIN_PLOT_PX = 120          # the least a plot's view may have, wide and high, to be read
MIN_HEIGHT_PX = 280        # the figure's least height until its plots are laid out and say their own
LEAST_WIDTH_PX = 3 * MIN_PLOT_PX + 80      # and its least width, with the first plot's y axis and the margins
NATIVE_COLOUR = "#ff2d55"
GIB = 1024.0 ** 3
MIB = 1024.0 ** 2


def token_axis(shape: kv.CacheShape, points: int = 256) -> np.ndarray:
    """Token counts from 0 to the context length, with every sliding window's knee included."""
    limit = max(1, shape.max_positions)
    windows = [w for w in shape.windows if w and w < limit]
    return np.unique(np.concatenate((np.linspace(0, limit, points).astype(np.int64),
                                     np.asarray(windows, dtype=np.int64))))


def variant_pens(variants: list[kv.Variant]) -> list[QPen]:
    """The pen of each variant's curve: the native one thick and red, MLA dashed, the rest on viridis. The
    KV lab's table draws the same pens beside its rows, where they are the plots' legend."""
    colours = pg.colormap.get("viridis").getLookupTable(0.0, 0.9, max(2, len(variants)))
    return [pg.mkPen(NATIVE_COLOUR if variant.native else tuple(colours[index]),
                     width=4 if variant.native else 1.5,
                     style=Qt.PenStyle.DashLine if variant.kind == "mla" else Qt.PenStyle.SolidLine)
            for index, variant in enumerate(variants)]


class BytesPlot(pg.GraphicsLayoutWidget):
    """One plot per dtype; `plots[dtype]` is its PlotItem, `ci` the whole figure for export. The
    figure's title is for exports; in the panel the dock and the table name the model."""

    def __init__(self, parent=None, titled: bool = True, plots: bool = True, legend: bool = True) -> None:
        """`plots=False`: the figure without its plots, which `add_plots` adds one at a time (VariantsTab).
        `legend=False`: its legend kept (`legend.items`) but not shown, where a table beside it draws each
        curve's pen by its row (the KV lab: in a short dock the legend's row took the table's)."""
        super().__init__(parent)
        self.title = (self.addLabel("KV-cache bytes against tokens", row=0, col=0, colspan=len(DTYPES), size=TITLE)
                      if titled else None)
        self.setMinimumHeight(MIN_HEIGHT_PX)
        self.plots: dict[str, pg.PlotItem] = {}
        # The legend sits in a row of its own below the plots, so it hides no curve and takes no width
        # from them (in a column beside them it was cut off at the panel's edge).
        self.legend_box = (self.addViewBox(row=2, col=0, colspan=len(DTYPES), enableMouse=False) if legend
                           else None)
        self.ci.layout.setRowStretchFactor(1, 1)
        self.legend = pg.LegendItem(labelTextSize=LEGEND)
        if self.legend_box is not None:
            self.legend.setParentItem(self.legend_box)
            self.legend.anchor(itemPos=(0.5, 0), parentPos=(0.5, 0), offset=(0, 0))
        self.unit = MIB
        self.turns = Turns(self)             # a drawing's dtypes still to draw, one a turn (draw_later)
        self._fit_legend()
        if plots:
            for _ in self.add_plots():
                pass

    def add_plots(self) -> Iterator[None]:
        """The dtypes' plots not added yet, yielding between two: each PlotItem is ~15 ms of GUI work, and the
        three built in one turn, with the KV lab's first drawing and their paint, held the window 120-240 ms."""
        for col, dtype in enumerate(DTYPES):
            if dtype in self.plots:
                continue
            plot = self.addPlot(row=1, col=col)
            plot.setTitle(dtype if dtype != "int8" else "8-bit", size=TITLE)
            plot.setLabels(bottom="tokens")
            plot.getAxis("left").enableAutoSIPrefix(False)       # "MiB (x0.001)": the unit is chosen in draw()
            plot.showGrid(x=True, y=True, alpha=0.2)
            plot.getViewBox().setMinimumSize(MIN_PLOT_PX, MIN_PLOT_PX)     # the figure's least size follows
            if col:
                plot.setYLink(self.plots[DTYPES[0]])
                plot.getAxis("left").setStyle(showValues=False)           # one y axis, read on the first plot
            self.plots[dtype] = plot
            if len(self.plots) < len(DTYPES):
                yield

    def _fit_legend(self) -> None:
        """As many legend columns as the width holds (one per variant at most), and the row as tall as they need;
        the figure no shorter than its plots' MIN_PLOT_PX views, their titles and axes and that row."""
        if getattr(self, "legend", None) is None or getattr(self, "closed", False):
            return                              # a resize while the figure is built, or once closed (no scene)
        if self.legend_box is not None:
            columns = max(1, min(len(self.legend.items) or 1, (self.width() - 20) // LEGEND_COLUMN_PX))
            if columns != self.legend.columnCount:
                self.legend.setColumnCount(columns)
            self.legend.updateSize()
            self.ci.layout.setRowFixedHeight(2, max(LEGEND_ROW_PX, self.legend.boundingRect().height() + 4))
        if self.plots:
            # A legend of several rows (seven variants) takes its height from the plots, not from their 120 px.
            self.setMinimumHeight(self.least_size().height())

    def least_size(self) -> QSize:
        """The least size at which every plot keeps a MIN_PLOT_PX view: what the figure's layout asks, from the
        plots' titles, axes and tick values as they are drawn and the legend's row (an estimate until the
        plots are built)."""
        if not self.plots:
            return QSize(LEAST_WIDTH_PX, MIN_HEIGHT_PX)
        least = self.ci.effectiveSizeHint(Qt.SizeHint.MinimumSize)
        frame = 2 * self.frameWidth()
        return QSize(int(np.ceil(least.width())) + frame, int(np.ceil(least.height())) + frame)

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self._fit_legend()

    def curves(self, dtype: str) -> list[pg.PlotDataItem]:
        """The curves drawn for `dtype`, a drawing asked for later done first."""
        self.draw_pending()
        return self.plots[dtype].listDataItems()

    def draw_later(self, shape: kv.CacheShape, ranks: list[int] | None, name: str) -> None:
        """`draw` from the next turn of the event loop on: the curves' numbers in one turn, then one dtype's plot
        a turn (see _parts), then their paint in a turn of its own. The KV lab's first raise builds the panel in
        this one, and its 18 curves and their paint in one turn were its longest freeze (~130 ms of GUI work at
        8,000 tokens). A newer drawing asked replaces this one."""
        self.clear_curves()
        self.turns.start(self._painted_once(self._parts(shape, ranks, name)))

    def _painted_once(self, parts: Iterator[None]) -> Iterator[None]:
        """`parts`, the figure not painted between them but once, in a turn after the last: each paint of all
        three plots is ~20-30 ms of GUI work, after each dtype's curves it doubled that dtype's turn."""
        self.setUpdatesEnabled(False)
        try:
            yield from parts
            yield
        finally:                      # also where the drawing is dropped (clear_curves, a newer one)
            if shiboken6.isValid(self):           # or dropped as the figure is deleted
                self.setUpdatesEnabled(True)

    def draw_pending(self) -> None:
        """What a drawing asked for later has still to draw, drawn now."""
        self.turns.finish()

    def clear_curves(self) -> None:
        self.turns.stop()                           # nothing asked before is drawn over the cleared plots
        for plot in self.plots.values():
            plot.clear()
        self.legend.clear()

    def draw(self, shape: kv.CacheShape, ranks: list[int] | None, name: str) -> None:
        """Every variant of `shape` (with these MLA ranks) at every dtype, the native one marked."""
        self.clear_curves()
        for _ in self._parts(shape, ranks, name):
            pass

    def _parts(self, shape: kv.CacheShape, ranks: list[int] | None, name: str) -> Iterator[None]:
        """`draw`, yielding after the curves' numbers and colours are worked out (their first time, with
        the colour map read, ~25 ms of the first dtype's ~45), then after each dtype's plot (the curves cleared
        by the caller)."""
        tokens = token_axis(shape)
        variants = kv.variants(shape, ranks)
        peak = max(v.bytes_total(shape, int(tokens[-1]), DTYPES[0]) for v in variants)
        unit, unit_name = (GIB, "GiB") if peak >= GIB else (MIB, "MiB")
        pens = variant_pens(variants)
        yield
        self.unit = unit
        for col, dtype in enumerate(DTYPES):
            plot = self.plots[dtype]
            if col == 0:
                plot.setLabel("left", unit_name)
            for index, variant in enumerate(variants):
                curve = variant.bytes_curve(shape, tokens, dtype) / self.unit
                label = variant.name + (" (native)" if variant.native else "")
                item = plot.plot(tokens, curve, pen=pens[index])
                item.variant_name = label
                if col == 0:
                    self.legend.addItem(item, label)
            plot.setXRange(0, float(tokens[-1]), padding=0.02)
            step = nice_step(float(tokens[-1]) / 2.5)        # three labels at most: the plots are narrow
            plot.getAxis("bottom").setTickSpacing(step, step / 2)
            if col < len(DTYPES) - 1:
                yield
        if self.title is not None:
            self.title.setText(f"{name[:40]}: KV cache (all layers) against tokens")
        self._fit_legend()


def save_bytes_plot(path, shape: kv.CacheShape, ranks: list[int] | None, name: str, width: int, height: int,
                    theme: str = "light"):
    """The plot laid out offscreen at exactly width × height in the figure `theme` and written as PNG or
    SVG (see export)."""
    with figure_colours(theme):
        figure = BytesPlot()
        figure.draw(shape, ranks, name)
    lay_out(figure, width, height, theme)
    try:
        return export.save_figure(figure, path, width, height)
    finally:
        figure.close()
        figure.deleteLater()
