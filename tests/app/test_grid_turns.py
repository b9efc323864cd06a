"""A large head asked while the all-heads grid fills goes first, through the real threads: once it is asked, the
grid finishes at most the blocks of rows it had begun (one per thread it fills on) and starts no other until the
head's map is shown; and a second holder of the grid's turn (an export running) keeps the grid waiting after the
head is shown, until the export ends too. Counted in turns (blocks of rows reduced, in the order they ended), not
in wall time. The grid's blocks and the head's are told apart by their block side: the grid's tiles reduce
tile_block(T) cells a side, the large map display_factor(T) cells."""
from __future__ import annotations

import threading

import numpy as np
import pyqtgraph as pg
import pytest

from explorer.app.widgets import long_export
from explorer.app.widgets.grid_filler import GridFiller
from explorer.app.widgets.long_export import LongExport
from explorer.app.widgets.long_head import LongHead, Request
from explorer.drawing.heatmap import Heatmap
from explorer.views import long_maps, trace_views
from explorer.views.grid import tile_block

N = 2048                  # 2048² entries: rebuilt on demand, drawn as a long map
SIDE = 512                # the large map's display side here: 4 × 4 blocks
ROWS = 128                # query rows a turn: a map is 16 turns


@pytest.fixture(scope="module")
def trace():
    from explorer.core.decode import Decoder, RecordOptions
    from explorer.core.runtime import from_tensors
    from tests.core.conftest import make_hf_model

    hf_model = make_hf_model("llama")
    loaded = from_tensors(dict(hf_model.config.to_dict(), max_position_embeddings=N + 16), hf_model.state_dict())
    return Decoder(loaded, RecordOptions(), capacity=N + 8).prefill(np.arange(N) % 96)


@pytest.fixture
def turns(monkeypatch):
    """Every block of rows reduced, in the order it ended: ("grid" or "head", its block side); and marks."""
    monkeypatch.setattr(long_maps, "DISPLAY_SIDE", SIDE)
    monkeypatch.setattr(long_maps, "ROW_BLOCK", ROWS)         # many turns a map, so that the order says something
    grid_side, head_side = tile_block(N, N), long_maps.display_factor(N, N, SIDE)
    assert grid_side != head_side
    log, lock, reduced = [], threading.Lock(), long_maps._reduced

    def counted(got, row, columns, left, block, signed=False):
        out = reduced(got, row, columns, left, block, signed)
        with lock:
            log.append("grid" if block == grid_side else "head" if block == head_side else block)
        return out

    monkeypatch.setattr(long_maps, "_reduced", counted)

    def mark(what: str) -> int:
        with lock:
            log.append(what)
            return len(log) - 1
    return log, mark


def views(qtbot):
    widget = pg.GraphicsLayoutWidget()
    qtbot.addWidget(widget)
    filler = GridFiller(widget)
    head = LongHead(Heatmap(widget.ci), filler.pause, widget)
    return widget, filler, head


def test_a_head_asked_while_the_grid_fills_is_computed_before_any_more_of_the_grid(qtbot, trace, turns):
    log, mark = turns
    _widget, filler, head = views(qtbot)
    shown = []
    head.shown.connect(shown.append)
    filler.start(trace, None, False, "weights")
    qtbot.waitUntil(lambda: log.count("grid") >= 3, timeout=60_000)          # the grid well under way
    last = trace.model.n_layers - 1
    request = Request(trace_views.view(trace), last, (1,), "weights", False)
    head.show(request)                  # holds the grid's pause before it returns
    # Marked once the pause is held: a grid block begun between a mark made before and the hold (the request
    # built, a loaded machine) is no block in flight at the hold, and counting it made the test flaky.
    asked = mark("asked")
    qtbot.waitUntil(lambda: bool(shown), timeout=60_000)
    done = mark("shown")
    meanwhile = log[asked + 1: done]
    head_blocks = [i for i, turn in enumerate(meanwhile) if turn == "head"]
    assert head_blocks, meanwhile
    before_last = meanwhile[: head_blocks[-1]]
    in_flight = long_maps.THREADS                 # a block each grid thread had begun when the head was asked
    assert before_last.count("grid") <= in_flight, (
        f"the grid went on while the head was computed: {meanwhile}")
    qtbot.waitUntil(lambda: not filler.running, timeout=120_000)           # and then it fills
    assert filler.done == filler.total


def test_an_export_that_holds_the_grid_keeps_it_waiting_after_a_head_is_shown(qtbot, trace, turns, tmp_path,
                                                                            monkeypatch):
    log, mark = turns
    _widget, filler, head = views(qtbot)
    export = LongExport(head.maps, filler.pause, tiles=filler.tiles)
    writing, finish = threading.Event(), threading.Event()

    def export_attention(*args, **kwargs):               # an exact map being written: it takes a while
        writing.set()
        finish.wait(60)
        return tmp_path / "head.npy"

    monkeypatch.setattr(long_export.export, "export_attention", export_attention)
    shown, ended = [], []
    head.shown.connect(shown.append)
    export.ended.connect(lambda: ended.append(True))
    filler.start(trace, None, False, "weights")
    qtbot.waitUntil(lambda: log.count("grid") >= 1, timeout=60_000)
    export.start(trace, tmp_path / "head.npy", 0, 0)
    assert writing.wait(30)
    head.show(Request(trace_views.view(trace), 1, (2,), "weights", False))
    qtbot.waitUntil(lambda: bool(shown), timeout=60_000)
    assert export.running and filler.pause.is_set(), "the head, once shown, handed the grid the export's turn"
    held = mark("head shown, export running")
    qtbot.waitUntil(lambda: bool(shown) and not head.job.running, timeout=10_000)
    freed = mark("the export ends")
    finish.set()
    assert log[held:freed].count("grid") == 0, log[held:freed]
    qtbot.waitUntil(lambda: bool(ended), timeout=30_000)
    assert not filler.pause.is_set()
    qtbot.waitUntil(lambda: not filler.running, timeout=120_000)
    assert filler.done == filler.total
