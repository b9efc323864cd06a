"""The large map of a long trace: one head (or the mean of a layer's heads) drawn as block maxima over
its real extent, computed on a background thread, with exact values on hover and when zoomed in.

    shown[I, J] = max { A[i, j] : i // f = I, j // f = J },   f = ceil(T / DISPLAY_SIDE)

Maxima, so a single strong weight stays visible however far the map is reduced. Hovering computes
the exact A[i, j] from the one query row i; zooming in draws the window in view over the blocks at
its own, finer blocks (DETAIL_SIDE a side), and its exact cells once it holds DETAIL_SIDE or fewer.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from PySide6.QtCore import QObject, QTimer, Signal

from explorer.app.widgets.grid_filler import Background
from explorer.drawing.heatmap import Heatmap
from explorer.views.long_maps import THREADS, Cancelled, ReducedMaps, block_maxima, display_factor, exact_cell, extent
from explorer.views.maps import axis_labels, head_levels, log_scaled

DETAIL_SIDE = 1024        # a zoomed view is drawn at most this many blocks a side, exactly when it holds fewer cells
KEPT = 8                  # reduced maps kept (4 MB each at 8,000 tokens): going back to a head is instant
ZOOM_SETTLE_MS = 150      # the view must rest this long before its exact cells are computed


@dataclass(frozen=True, eq=False)
class Request:
    """What the large view is asked to show."""

    view: object              # trace_views.View
    layer: int
    heads: tuple[int, ...]
    values: str               # "weights" | "scores"
    log: bool

    @property
    def key(self) -> tuple:
        return (id(self.view.trace), self.view.step, self.view.kind, self.layer, self.heads, self.values)

    @property
    def size(self) -> tuple[int, int]:
        return extent(self.view.trace, self.view.step, self.view.cross, self.layer)

    @property
    def factor(self) -> int:
        return display_factor(*self.size)


class LongHead(QObject):
    """Draws Requests into `heatmap`; `shown(request)` once a map is painted."""

    shown = Signal(object)
    detailed = Signal(object)                # (r0, r1, c0, c1): exact cells drawn for that window

    def __init__(self, heatmap: Heatmap, pause=None, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.heatmap = heatmap
        self.pause = pause                   # grid_filler.Holds: the grid waits while a head is computed
        self.request: Request | None = None
        self.painted: Request | None = None
        self.maps = ReducedMaps(limit=KEPT)             # a decoding step computes only its new rows
        self._labels: tuple = (None, None)               # (trace, (rows, cols))
        self.job, self.detail_job = Background(self), Background(self)
        self.job.done.connect(self._on_map)
        self.detail_job.done.connect(self._on_detail)
        self._settle = QTimer(self)
        self._settle.setSingleShot(True)
        self._settle.setInterval(ZOOM_SETTLE_MS)
        self._settle.timeout.connect(self._zoomed)
        heatmap.plot.getViewBox().sigRangeChanged.connect(lambda *_: self._settle.start() if self.active else None)

    @property
    def active(self) -> bool:
        return self.request is not None

    def show(self, request: Request) -> None:
        same = self.request is not None and request.key == self.request.key
        if same and self.job.running:
            self.request = request                               # drawn as asked once computed
            return
        if same and self.painted is not None and (self.painted.key, self.painted.log) == (request.key, request.log):
            return                                               # asked again (a repaint): nothing new
        self.request = request
        v, f = request.view, request.factor
        kept = self.maps.cached(v.trace, request.layer, request.heads, f, v.step, v.cross, request.values)
        if kept is not None:
            self.job.cancel()
            self._release()
            self._paint(request, kept)
            return
        title = f"computing layer {request.layer}" + (f", head {request.heads[0]}…" if len(request.heads) == 1
                                                      else ", mean of heads…")
        if self.painted is not None and self.painted.view.kind == v.kind and (
                self.painted.layer, self.painted.heads, self.painted.values, self.painted.factor) == (
                request.layer, request.heads, request.values, f):
            self.heatmap.plot.setTitle(title)            # the same map a step longer: the old stays meanwhile
        else:                                            # another map: none is shown until it is computed,
            self.heatmap.image.clear()                   # in the same view (its zoom stays)
            self.heatmap.clear_detail()
            self.heatmap.plot.setTitle(title)
            self.painted = None
        if self.pause is not None:
            self.pause.hold(self)
        self.job.run(lambda cancelled: self.maps.get(v.trace, request.layer, request.heads, f, v.step, v.cross,
                                                     request.values, cancelled, THREADS), name="attention-head")

    def stop(self) -> None:
        """Show no long map any more (the trace is short, or gone), nor its title: a short map after a long
        one must not read "3659×3659 in 4×4 block maxima"."""
        was_long = self.request is not None or self.painted is not None
        self.job.cancel()
        self.detail_job.cancel()
        self._release()
        self.request = self.painted = None
        self.heatmap.clear_detail()
        if was_long:
            self.heatmap.plot.setTitle(None)

    def drop_work(self) -> None:
        """Another model or run (base.Panel's one path): no map of it is computed, kept or drawn."""
        self.stop()
        self.forget()
        self._labels = (None, None)

    def forget(self) -> None:
        """Keep no computed map: the next request computes again."""
        self.maps.clear()
        self.painted = None

    def cell(self, row: int, col: int) -> float:
        """The exact value under the pointer, from its one query row (NaN: masked)."""
        r = self.request
        return exact_cell(r.view.trace, r.layer, r.heads, row, col, r.view.step, r.view.cross, r.values)

    def _release(self) -> None:
        if self.pause is not None:
            self.pause.release(self)

    def _on_map(self, generation: int, result) -> None:
        if generation != self.job.generation or self.request is None:
            return
        self._release()
        if isinstance(result, Cancelled):
            return
        if isinstance(result, Exception):
            self.heatmap.plot.setTitle(f"could not compute the map: {result}")
            return
        self._paint(self.request, result)

    def _paint(self, request: Request, reduced: np.ndarray) -> None:
        trace = request.view.trace
        if self._labels[0] is not trace:
            self._labels = (trace, axis_labels(trace, request.size, request.view.cross, numbered=True))
        rows, cols = self._labels[1]
        shown, levels = head_levels(reduced, request.values, request.log)
        self.heatmap.set_matrix(shown, levels, rows, cols, keep_view=True, extent=request.size,
                                signed=request.values == "weights" and not request.log)
        self._title(request)
        self.painted = request
        self.shown.emit(request)
        self._settle.start()

    def _title(self, request: Request, window: tuple[int, int, int, int] | None = None, block: int = 1) -> None:
        f, (t_q, t_kv) = request.factor, request.size
        if window is not None:
            r0, r1, c0, c1 = window
            what = "exact cells" if block == 1 else f"{block}×{block} block maxima"
            text = f"{what} in view: queries {r0}–{r1 - 1}, keys {c0}–{c1 - 1}"
        else:                       # short enough for the map's width on a 1366-px screen; the tooltip says more
            text = f"{t_q}×{t_kv} in {f}×{f} block maxima · zoom for exact" if f > 1 else ""
        self.heatmap.plot.setTitle(text)

    def _zoomed(self) -> None:
        """Draw the window finer than the whole map once the view holds fewer cells: its own blocks,
        of the side that brings it to DETAIL_SIDE blocks, exact cells (block 1) when it holds fewer."""
        request = self.painted
        if request is None or request.factor == 1:
            return
        r0, r1, c0, c1 = self.heatmap.visible_cells()
        block = display_factor(r1 - r0, c1 - c0, DETAIL_SIDE)
        if block >= request.factor or r1 <= r0 or c1 <= c0:
            self.detail_job.cancel()
            self.heatmap.clear_detail()
            self._title(request)
            return
        v, window = request.view, (r0, r1, c0, c1)
        self.detail_job.run(lambda cancelled: (request, window, block, block_maxima(
            v.trace, request.layer, request.heads, block, v.step, v.cross, request.values, window, cancelled)),
            name="attention-detail")

    def _on_detail(self, generation: int, result) -> None:
        if generation != self.detail_job.generation or isinstance(result, Exception):
            return
        request, window, block, reduced = result
        if request is not self.painted:
            return
        shown = log_scaled(reduced)[0] if request.log and request.values == "weights" else reduced
        self.heatmap.set_detail(shown, window[0] // block * block, window[2] // block * block, block)
        self._title(request, window, block)
        self.detailed.emit(window)
