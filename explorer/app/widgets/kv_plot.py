"""Bytes against tokens for every cache variant, up to the model's context, at float32, bfloat16 and 8-bit.

Three small multiples with one shared y axis, so the dtype's factor reads off as
a height and the variants' ratios as the gaps between curves (DeepSeek-V2,
Table 1, per token per layer: MHA 2·n_h·d_h, GQA 2·n_g·d_h, MQA 2·d_h,
MLA d_c + d_R). The model's own variant is the thick red curve in each.
"""
from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pyqtgraph as pg
import shiboken6
from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QSplitter

from explorer.app.widgets.plot_text import LEGEND, TITLE
from explorer.core import kv_variants as kv
from explorer.drawing import export
from explorer.drawing.colours import figure_colours
from explorer.drawing.figures import lay_out
from explorer.drawing.heatmap import nice_step

DTYPES = ("float32", "bfloat16", "int8")
LEGEND_COLUMN_PX = 120     # the width one legend column needs
LEGEND_ROW_PX = 20
MIN_HEIGHT_PX = 280        # three legible plots (a 120 px view each) with their titles, ticks and legend
NATIVE_COLOUR = "#ff2d55"
GIB = 1024.0 ** 3
MIB = 1024.0 ** 2


def token_axis(shape: kv.CacheShape, points: int = 256) -> np.ndarray:
    """Token counts from 0 to the context length, with every sliding window's knee included."""
    limit = max(1, shape.max_positions)
    windows = [w for w in shape.windows if w and w < limit]
    return np.unique(np.concatenate((np.linspace(0, limit, points).astype(np.int64),
                                     np.asarray(windows, dtype=np.int64))))


class FitSplitter(QSplitter):
    """Side by side where there is width for both, one above the other where there is not: beside
    the table in a 900 px dock, each of the three plots had 80 px."""

    def __init__(self, side_by_side_px: int, parent=None) -> None:
        super().__init__(Qt.Orientation.Horizontal, parent)
        self.side_by_side_px = side_by_side_px
        self.setChildrenCollapsible(False)

    def resizeEvent(self, event) -> None:
        wanted = (Qt.Orientation.Horizontal if event.size().width() >= self.side_by_side_px
                  else Qt.Orientation.Vertical)
        if wanted != self.orientation():
            self.setOrientation(wanted)
        super().resizeEvent(event)


class BytesPlot(pg.GraphicsLayoutWidget):
    """One plot per dtype; `plots[dtype]` is its PlotItem, `ci` the whole figure for export. The
    figure's title is for exports; in the panel the dock and the table name the model."""

    def __init__(self, parent=None, titled: bool = True, plots: bool = True) -> None:
        """`plots=False`: the figure without its plots, which `add_plots` adds one at a time (VariantsTab)."""
        super().__init__(parent)
        self.title = (self.addLabel("KV-cache bytes against tokens", row=0, col=0, colspan=len(DTYPES), size=TITLE)
                      if titled else None)
        self.setMinimumHeight(MIN_HEIGHT_PX)
        self.plots: dict[str, pg.PlotItem] = {}
        # The legend sits in a row of its own below the plots, so it hides no curve and takes no width
        # from them (in a column beside them it was cut off at the panel's edge).
        self.legend_box = self.addViewBox(row=2, col=0, colspan=len(DTYPES), enableMouse=False)
        self.ci.layout.setRowStretchFactor(1, 1)
        self.legend = pg.LegendItem(labelTextSize=LEGEND)
        self.legend.setParentItem(self.legend_box)
        self.legend.anchor(itemPos=(0.5, 0), parentPos=(0.5, 0), offset=(0, 0))
        self.unit = MIB
        self._pending: Iterator | None = None       # a drawing's dtypes still to draw, one a turn (draw_later)
        self._later = QTimer(self)
        self._later.setSingleShot(True)
        self._later.timeout.connect(self._next_part)
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
            if col:
                plot.setYLink(self.plots[DTYPES[0]])
            self.plots[dtype] = plot
            if len(self.plots) < len(DTYPES):
                yield

    def _fit_legend(self) -> None:
        """As many legend columns as the width holds (one per variant at most), and the row as tall as they need."""
        if getattr(self, "legend", None) is None or getattr(self, "closed", False):
            return                              # a resize while the figure is built, or once closed (no scene)
        columns = max(1, min(len(self.legend.items) or 1, (self.width() - 20) // LEGEND_COLUMN_PX))
        if columns != self.legend.columnCount:
            self.legend.setColumnCount(columns)
        self.legend.updateSize()
        legend_px = max(LEGEND_ROW_PX, self.legend.boundingRect().height() + 4)
        self.ci.layout.setRowFixedHeight(2, legend_px)
        # A legend of several rows (seven variants) takes its height from the plots, not from their 120 px.
        self.setMinimumHeight(int(MIN_HEIGHT_PX + legend_px - LEGEND_ROW_PX))

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
        self._pending = self._painted_once(self._parts(shape, ranks, name))
        self._later.start(0)          # a timer, not a queued call: the window's own timers and input go first

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
        pending, self._pending = self._pending, None
        for _ in pending or ():
            pass

    def _next_part(self) -> None:
        if self._pending is None:
            return
        try:
            next(self._pending)
        except StopIteration:
            self._pending = None
            return
        self._later.start(0)

    def clear_curves(self) -> None:
        self._pending = None                        # nothing asked before is drawn over the cleared plots
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
        colours = pg.colormap.get("viridis").getLookupTable(0.0, 0.9, max(2, len(variants)))
        yield
        self.unit = unit
        for col, dtype in enumerate(DTYPES):
            plot = self.plots[dtype]
            if col == 0:
                plot.setLabel("left", unit_name)
            for index, variant in enumerate(variants):
                curve = variant.bytes_curve(shape, tokens, dtype) / self.unit
                pen = pg.mkPen(NATIVE_COLOUR if variant.native else tuple(colours[index]),
                               width=4 if variant.native else 1.5,
                               style=Qt.PenStyle.DashLine if variant.kind == "mla" else Qt.PenStyle.SolidLine)
                label = variant.name + (" (native)" if variant.native else "")
                item = plot.plot(tokens, curve, pen=pen)
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
