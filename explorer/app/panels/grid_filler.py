"""The all-heads grid of a long trace, computed head by head on a background thread and drawn as it fills.

Each head's tile is `long_maps.ReducedMaps.get` (block maxima of A or S, computed a block of query rows at
a time): numpy releases the GIL in its matmuls and ufuncs, so the GUI thread only places finished tiles.
The tiles are kept per trace, so a second look (a repaint, the panel shown again) computes nothing,
and a new trace starts from a blank grid: no tile of another trace is ever shown. A large head
asked for meanwhile goes first: the grid pauses between blocks of rows while `pause` is held.
"""
from __future__ import annotations

import math
import threading
from collections.abc import Callable

from PySide6.QtCore import QObject, QTimer, Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QProgressBar, QPushButton, QWidget

from explorer.views.grid import Mosaic, blank_mosaic
from explorer.views.long_maps import THREADS, Cancelled, ReducedMaps, extent, grid_block

REPAINT_MS = 120          # tiles that arrive closer together than this are drawn together


class Background(QObject):
    """One computation at a time on a daemon thread; `done(generation, result)` arrives on the GUI thread
    for the newest one only (an older one is cancelled and its result dropped). A result is the
    function's return value, or the exception it raised."""

    done = Signal(int, object)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.generation = 0
        self._cancel = threading.Event()
        self.running = False
        self.done.connect(self._finished)

    def run(self, work: Callable[[Callable[[], bool]], object], name: str = "attention-map") -> int:
        """Start `work(cancelled)`; its generation, which `done` carries back."""
        self.cancel()
        self.generation += 1
        self._cancel = cancel = threading.Event()
        self.running = True
        generation = self.generation

        def body() -> None:
            try:
                result = work(cancel.is_set)
            except Exception as error:          # handed to the GUI thread, which says it or drops it
                result = error
            try:
                self.done.emit(generation, result)
            except RuntimeError:                # the panel is gone
                pass

        threading.Thread(target=body, name=name, daemon=True).start()
        return generation

    def _finished(self, generation: int, _result) -> None:
        if generation == self.generation:
            self.running = False

    def cancel(self) -> None:
        self._cancel.set()
        self.running = False


class GridFiller(QObject):
    """Fills a Mosaic tile by tile in the background: `tile_ready(layer, head)` as each is placed,
    `progressed(done, total)`, `finished(complete)` (False: cancelled), `repaint()` at most every
    REPAINT_MS while tiles arrive."""

    tile_ready = Signal(int, int)
    progressed = Signal(int, int)
    finished = Signal(bool)
    repaint = Signal()
    _computed = Signal(int, int, int, object)           # generation, layer, head, tile (from the thread)
    _ended = Signal(int, bool)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.tiles = ReducedMaps()              # every head's tile, for the trace last filled
        self.mosaic: Mosaic | None = None
        self.done = self.total = 0
        self.running = False
        self.pause = threading.Event()           # set: the grid waits (a large head is being computed)
        self._generation = 0
        self._request: tuple | None = None
        self._cancel = threading.Event()
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(REPAINT_MS)
        self._timer.timeout.connect(self.repaint)
        self._computed.connect(self._place)
        self._ended.connect(self._end)

    def start(self, trace, upto_step, cross: bool, values: str) -> Mosaic:
        """A blank grid for this trace with its kept tiles placed at once; the rest computed in the background.
        The same grid asked for again while it fills goes on filling."""
        request = (trace, upto_step, cross, values)
        known = self._request
        if self.running and known is not None and known[0] is trace and known[1:] == request[1:]:
            return self.mosaic
        self.cancel()
        self._request = request
        self._generation += 1
        n_layers, n_heads = trace.model.n_layers, trace.model.n_heads
        block, (t_q, t_kv) = grid_block(trace, upto_step, cross), extent(trace, upto_step, cross)
        self.mosaic = blank_mosaic(n_layers, n_heads, (math.ceil(t_q / block), math.ceil(t_kv / block)))
        missing = []
        for layer in range(n_layers):
            for head in range(n_heads):
                tile = self.tiles.cached(trace, layer, [head], block, upto_step, cross, values)
                if tile is None:
                    missing.append((layer, head))
                else:
                    self.mosaic.place(layer, head, tile)
        self.total, self.done = n_layers * n_heads, n_layers * n_heads - len(missing)
        if not missing:
            return self.mosaic
        self.running = True
        self._cancel = cancel = threading.Event()
        generation = self._generation
        args = (trace, upto_step, cross, values, block, missing, cancel, generation)
        threading.Thread(target=self._fill, args=args, name="attention-grid", daemon=True).start()
        return self.mosaic

    def _fill(self, trace, upto_step, cross, values, block, missing, cancel, generation) -> None:
        def cancelled() -> bool:
            while self.pause.is_set() and not cancel.is_set():
                cancel.wait(0.02)
            return cancel.is_set()

        try:
            for layer, head in missing:
                tile = self.tiles.get(trace, layer, [head], block, upto_step, cross, values, cancelled, THREADS)
                self._computed.emit(generation, layer, head, tile)
            self._ended.emit(generation, True)
        except Cancelled:
            self._ended.emit(generation, False)
        except RuntimeError:                     # the panel is gone
            pass

    def _place(self, generation: int, layer: int, head: int, tile) -> None:
        if generation != self._generation or self.mosaic is None:
            return                               # a tile of a grid no longer shown
        self.mosaic.place(layer, head, tile)
        self.done += 1
        self.tile_ready.emit(layer, head)
        self.progressed.emit(self.done, self.total)
        if not self._timer.isActive():
            self._timer.start()

    def _end(self, generation: int, complete: bool) -> None:
        if generation != self._generation:
            return
        self.running = False
        self._timer.stop()
        self.repaint.emit()
        self.finished.emit(complete)

    def cancel(self) -> None:
        """Stop filling: the tiles computed so far stay drawn (and kept)."""
        self._cancel.set()
        if self.running:
            self.running = False
            self._generation += 1                # what is still on its way is dropped
            self._timer.stop()
            self.repaint.emit()
            self.finished.emit(False)

    def forget(self) -> None:
        """Stop, and show no grid (a trace with no attention to show)."""
        self.cancel()
        self.mosaic = None


class GridProgress(QWidget):
    """'computing heads 37 / 270' with a bar and Cancel, shown while the grid fills."""

    def __init__(self, filler: GridFiller, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.filler = filler
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self.label = QLabel()
        self.bar = QProgressBar()
        self.bar.setTextVisible(False)
        self.bar.setMaximumHeight(12)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setToolTip("Stop computing the grid; the heads computed so far stay")
        self.cancel_button.clicked.connect(filler.cancel)
        layout.addWidget(self.label)
        layout.addWidget(self.bar, 1)
        layout.addWidget(self.cancel_button)
        filler.progressed.connect(self._show)
        filler.finished.connect(self._finished)
        self.hide()

    def begin(self) -> None:
        if self.filler.running:
            self._show(self.filler.done, self.filler.total)
            self.show()
        else:
            self.hide()

    def _show(self, done: int, total: int) -> None:
        self.label.setText(f"computing heads {done} / {total}")
        self.bar.setRange(0, total)
        self.bar.setValue(done)

    def _finished(self, complete: bool) -> None:
        self.hide()
