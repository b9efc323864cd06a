"""The all-heads grid of a long trace, computed head by head on a background thread and drawn as it fills.

Each head's tile is `long_maps.ReducedMaps.get` (block maxima of A or S, computed a block of query rows at
a time): numpy releases the GIL in its matmuls and ufuncs, so the GUI thread only places finished tiles.
The tiles are kept per trace, so a second look (a repaint, the panel shown again) computes nothing,
and a new trace starts from a blank grid: no tile of another trace is ever shown. Another step of
the same trace (a decoding step, the step slider) keeps the grid of the step shown, marked as
that step and dimmed, until every tile of the new step is in, then shows those: the grid never
flashes blank at each step, and never mixes two steps' tiles. A large head asked for meanwhile
goes first: the grid pauses between blocks of rows while anyone holds `pause` (Holds). So does a drawing in
parts (widgets.turns.pending): a tab raised while the grid filled froze 96-217 ms at 8,000 tokens, its GUI
thread waiting on the grid's threads for Python's lock; no new tile starts until its turns are done.
"""
from __future__ import annotations

import math
import threading
from collections.abc import Callable

from PySide6.QtCore import QObject, Qt, QTimer, Signal
from PySide6.QtGui import QPainter
from PySide6.QtWidgets import QHBoxLayout, QProgressBar, QPushButton, QWidget

from explorer.app.thread import person_request, threads
from explorer.app.thread.late_emit import emit_unless_deleted
from explorer.app.widgets import turns
from explorer.app.widgets.text_widgets import LineLabel
from explorer.views.grid import Mosaic, attention_records, blank_mosaic
from explorer.views.long_maps import THREADS, Cancelled, ReducedMaps, extent, grid_block

REPAINT_MS = 120          # tiles that arrive closer together than this are drawn together


class Background(QObject):
    """One computation at a time on a daemon thread; `done(generation, result)` arrives on the GUI thread
    for the newest one only (an older one is cancelled and its result dropped). A result is the
    function's return value, or the exception it raised. The work's `cancelled()` waits while the model thread
    runs a person's request (thread.person_request), as the grid's blocks of rows do."""

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

        def cancelled() -> bool:                 # a person's request goes first (thread.person_request)
            while person_request.running() and not cancel.is_set():
                cancel.wait(0.02)
            return cancel.is_set()

        def body() -> None:
            try:
                result = work(cancelled)
            except Exception as error:          # handed to the GUI thread, which says it or drops it
                result = error
            emit_unless_deleted(self, "done", generation, result)      # nobody to answer if the panel is gone

        threads.start(body, name, stop=cancel.set)
        return generation

    def _finished(self, generation: int, _result) -> None:
        if generation == self.generation:
            self.running = False

    def drop_work(self) -> None:
        """Another model or run came (base.Panel's one path): cancel, and hand on no result started before."""
        self.cancel()
        self.generation += 1
        self.running = False

    def cancel(self) -> None:
        self._cancel.set()
        self.running = False


class Holds:
    """The grid's pause: the grid waits between blocks of rows while anyone holds it (a large head being computed,
    an export running), and goes on once the last holder lets go. Each holder takes and gives back its own hold,
    so one that ends (an export written, a head shown) never hands the turn back to the grid while another
    still computes: with one shared flag, an export's end cleared the pause of a head still being computed."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._holders: set = set()

    def hold(self, holder: object) -> None:
        with self._lock:
            self._holders.add(holder)

    def release(self, holder: object) -> None:
        with self._lock:
            self._holders.discard(holder)

    def is_set(self) -> bool:
        """Whether the grid waits: someone holds it."""
        with self._lock:
            return bool(self._holders)


def step_of(trace, upto_step: int | None) -> int:
    """The index of the step a grid draws (0: the prefill)."""
    return trace.n_steps - 1 if upto_step is None else int(upto_step)


def _same_run(a: tuple, b: tuple) -> bool:
    """Whether two requests (trace, upto_step, cross, values) are steps of one run: the same kind and
    values, and the earlier one's records are the first of the later one's (decoding shares them)."""
    if a[2:] != b[2:]:
        return False
    first, second = (attention_records(r[0], 0, r[1], r[2]) for r in (a, b))
    shorter, longer = sorted((first, second), key=len)
    return all(x is y for x, y in zip(shorter, longer))


class GridFiller(QObject):
    """Fills a Mosaic tile by tile in the background: `tile_ready(layer, head)` as each is placed,
    `progressed(done, total)`, `finished(complete)` (False: cancelled), `repaint()` at most every
    REPAINT_MS while tiles arrive. `shown` is the grid to draw: `mosaic` itself, or while `updating`
    the complete grid of step `shown_step` of the same run, until `mosaic` (step `step`) is full."""

    tile_ready = Signal(int, int)
    progressed = Signal(int, int)
    finished = Signal(bool)
    repaint = Signal()
    _computed = Signal(int, int, int, object)           # generation, layer, head, tile (from the thread)
    _ended = Signal(int, bool)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.tiles = ReducedMaps()              # every head's tile, for the trace last filled
        self.mosaic: Mosaic | None = None       # the grid being filled, of step `step`
        self.shown: Mosaic | None = None        # the grid to draw (the previous step's while updating)
        self.step = self.shown_step = 0
        self._shown_request: tuple | None = None
        self.done = self.total = 0
        self.running = False
        self.pause = Holds()                     # held: the grid waits (a large head is computed, an export runs)
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
        """The grid to draw for this trace: its kept tiles placed at once, the rest computed in the
        background into a blank grid, shown as it fills, or, for another step of the run shown, once
        full (`shown` stays the shown step's meanwhile). The same grid asked for again goes on filling."""
        request = (trace, upto_step, cross, values)
        known = self._request
        if self.running and known is not None and known[0] is trace and known[1:] == request[1:]:
            return self.shown
        if self._stop():                                 # the grid asked for before: dropped, not shown
            self.finished.emit(False)
        self._request = request
        self._generation += 1
        self.step = step_of(trace, upto_step)
        missing = self._blank_with_kept(trace, upto_step, cross, values)
        previous = self._shown_request
        if not (missing and self.shown is not None and previous is not None and _same_run(previous, request)):
            self._show(self.mosaic, request)             # else the shown step stays until this one is full
        if missing:
            self._run(missing)
        return self.shown

    @property
    def updating(self) -> bool:
        """Whether `shown` is another step's grid, kept while this step's fills."""
        return self.shown is not None and self.shown is not self.mosaic

    def _blank_with_kept(self, trace, upto_step, cross, values) -> list[tuple[int, int]]:
        """A blank `mosaic` with the kept tiles placed; the (layer, head) of those still to compute."""
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
        self._block = block
        return missing

    def _show(self, mosaic: Mosaic, request: tuple) -> None:
        self.shown, self._shown_request = mosaic, request
        self.shown_step = step_of(request[0], request[1])

    def _run(self, missing: list[tuple[int, int]]) -> None:
        trace, upto_step, cross, values = self._request
        self.running = True
        self._cancel = cancel = threading.Event()
        args = (trace, upto_step, cross, values, self._block, missing, cancel, self._generation)
        threads.start(lambda: self._fill(*args), "attention-grid", stop=cancel.set)

    def held(self) -> bool:
        """Whether the grid waits: someone holds `pause`, a drawing has parts due (turns.pending), or the model
        thread runs a person's request (thread.person_request)."""
        return self.pause.is_set() or turns.pending() or person_request.running()

    def _fill(self, trace, upto_step, cross, values, block, missing, cancel, generation) -> None:
        def cancelled() -> bool:
            while self.held() and not cancel.is_set():
                cancel.wait(0.02)
            return cancel.is_set()

        try:
            for layer, head in missing:
                if cancelled():                  # waited between tiles too: no tile starts while held
                    raise Cancelled()
                tile = self.tiles.get(trace, layer, [head], block, upto_step, cross, values, cancelled, THREADS)
                if not emit_unless_deleted(self, "_computed", generation, layer, head, tile):
                    return                       # the panel is gone (the app closing): no one to fill for
            emit_unless_deleted(self, "_ended", generation, True)
        except Cancelled:
            emit_unless_deleted(self, "_ended", generation, False)

    def _place(self, generation: int, layer: int, head: int, tile) -> None:
        if generation != self._generation or self.mosaic is None:
            return                               # a tile of a grid no longer shown
        self.mosaic.place(layer, head, tile)
        self.done += 1
        self.tile_ready.emit(layer, head)
        self.progressed.emit(self.done, self.total)
        if not self.updating and not self._timer.isActive():      # an update is drawn once complete
            self._timer.start()

    def _end(self, generation: int, complete: bool) -> None:
        if generation != self._generation:
            return
        self.running = False
        self._timer.stop()
        self._show(self.mosaic, self._request)
        self.repaint.emit()
        self.finished.emit(complete)

    def cancel(self) -> None:
        """Stop filling: the tiles computed so far stay drawn (and kept); an update cancelled shows its
        step's tiles so far too, never the previous step's unmarked."""
        if self._stop():
            self._show(self.mosaic, self._request)
            self.repaint.emit()
            self.finished.emit(False)

    def _stop(self) -> bool:
        """Stop the thread filling (what is still on its way is dropped); whether one was running."""
        self._cancel.set()
        if not self.running:
            return False
        self.running = False
        self._generation += 1
        self._timer.stop()
        return True

    def forget(self) -> None:
        """Stop, and show no grid (a trace with no attention to show)."""
        self.cancel()
        self.mosaic = self.shown = self._shown_request = None

    def drop_work(self) -> None:
        """Another model or run (base.Panel's one path): stop, and keep no grid of it to show."""
        if self._stop():
            self.finished.emit(False)
        self._request = None
        self.mosaic = self.shown = self._shown_request = None


BAR_MAX_PX = 48


class ElidedProgressLine(LineLabel):
    """The progress words, elided in the middle with … to the label's width so the counts at the end stay
    readable: beside Learn at 1366 px the grid's side is ~250 px and the words were cut to "step 0: compu"."""

    def shown(self) -> str:
        return self.fontMetrics().elidedText(self.text(), Qt.TextElideMode.ElideMiddle, self.contentsRect().width())

    def paintEvent(self, _event) -> None:
        painter = QPainter(self)
        painter.drawText(self.contentsRect(), int(self.alignment() | Qt.AlignmentFlag.AlignVCenter), self.shown())


class GridProgress(QWidget):
    """'computing heads 37 / 270' with a bar and Cancel, shown while the grid fills, or while the full
    grid is exported (`follow`: its Cancel then stops the export)."""

    def __init__(self, filler: GridFiller, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.filler = filler
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self.label = ElidedProgressLine()        # never widens the grid's side of the splitter
        self.bar = QProgressBar()
        self.bar.setTextVisible(False)
        self.bar.setMaximumHeight(12)
        self.bar.setMaximumWidth(BAR_MAX_PX)     # the words carry the counts; the bar only shows the share
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setToolTip("Stop computing the grid; the heads computed so far stay")
        self.cancel_button.clicked.connect(self._cancel)
        # the style's 80 px minimum would leave the words too little room beside Learn at 1366 px
        self.cancel_button.setMaximumWidth(self.cancel_button.fontMetrics().horizontalAdvance("Cancel") + 20)
        self.export = None
        layout.addWidget(self.label, 4)
        layout.addWidget(self.bar, 1)
        layout.addWidget(self.cancel_button)
        filler.progressed.connect(self._show)
        filler.finished.connect(self._finished)
        self.hide()

    def follow(self, export) -> None:
        """Show a LongExport's progress through the full grid, and cancel it, while it runs."""
        self.export = export
        export.progressed.connect(self._exporting)
        export.ended.connect(self.begin)

    def _exporting(self, done: int, total: int) -> None:
        if self.export is not None and self.export.running:
            self.label.setText(f"exporting the full grid: heads {done} / {total}")
            self.bar.setRange(0, total)
            self.bar.setValue(done)
            self.show()

    def _cancel(self) -> None:
        if self.export is not None and self.export.running:
            self.export.cancel()
        else:
            self.filler.cancel()

    def begin(self) -> None:
        if self.filler.running:
            self._show(self.filler.done, self.filler.total)
            self.show()
        else:
            self.hide()

    def _show(self, done: int, total: int) -> None:
        filler = self.filler
        if filler.updating:                     # the previous step's grid is drawn, dimmed, meanwhile
            self.label.setText(f"step {filler.shown_step}, updating to step {filler.step}: {done} / {total}")
        else:
            self.label.setText(f"step {filler.step}: heads {done} / {total}")
        self.bar.setRange(0, total)
        self.bar.setValue(done)

    def _finished(self, complete: bool) -> None:
        self.hide()
