"""The all-heads grid waits while a drawing has parts due (widgets.turns): a tab raised at 8,000 tokens while the
grid filled froze 96-217 ms, its GUI thread waiting on the grid's threads for Python's lock. While a drawing's
turns are pending the grid starts no tile (counted by a spy on the tiles asked for); once they are done it fills
to the end, each tile once, with the trace's own attention weights (block 1 here: a tile is the head's exact
map, NaN where masked). A drawing that waits unseen (its panel hidden) or a Turns deleted holds nothing."""
from __future__ import annotations

import threading

import numpy as np
import shiboken6
from PySide6.QtCore import QObject

from explorer.app.widgets import turns
from explorer.app.widgets.grid_filler import GridFiller
from explorer.app.widgets.turns import Turns
from tests.app.synthetic_trace import build_trace

PARTS = 3
WAIT_S = 0.5               # a part waits this long at most for a tile to start (one starts at once unheld)


def spied_filler(parent: QObject):
    """A GridFiller whose tiles asked for are logged (layer, head) as they start, and an event set at the first."""
    filler = GridFiller(parent)
    started, first = [], threading.Event()
    get = filler.tiles.get

    def spy(trace, layer, heads, *args, **kwargs):
        started.append((layer, heads[0]))
        first.set()
        return get(trace, layer, heads, *args, **kwargs)

    filler.tiles.get = spy
    return filler, started, first


def expected_tiles(trace) -> dict:
    """Each head's map as the trace computes it, NaN where masked (a block-1 tile's maxima)."""
    mask = trace.mask(0)
    tiles = {}
    for layer in range(trace.model.n_layers):
        weights = trace.attention(layer)
        for head in range(trace.model.n_heads):
            tiles[layer, head] = np.where(mask, weights[head], np.nan)
    return tiles


def test_the_grid_starts_no_tile_while_a_drawing_has_turns_due_and_then_fills_exactly(qtbot):
    trace = build_trace(n_layers=3, n_heads=4, prompt_len=12)
    parent = QObject()
    filler, started, first = spied_filler(parent)
    placed = []
    filler.tile_ready.connect(lambda layer, head: placed.append((layer, head)))
    drawing = Turns(parent)
    during: list[int] = []

    def parts():
        for _ in range(PARTS):
            first.wait(WAIT_S)                  # the grid's thread has every chance to start a tile meanwhile
            during.append(len(started))
            yield

    drawing.start(parts())
    filler.start(trace, None, False, "weights")
    qtbot.waitUntil(lambda: not drawing.running, timeout=30_000)
    assert during == [0] * PARTS, f"tiles started while the drawing's turns were due: {started}"
    qtbot.waitUntil(lambda: not filler.running, timeout=60_000)
    assert filler.done == filler.total == 12
    assert sorted(placed) == sorted(set(placed)) and len(placed) == 12, placed      # each tile once
    for (layer, head), tile in expected_tiles(trace).items():
        np.testing.assert_allclose(filler.shown.tile(layer, head), tile, rtol=1e-5, atol=1e-6, equal_nan=True)


def test_a_drawing_waiting_unseen_or_deleted_holds_the_grid_no_longer(qtbot):
    trace = build_trace(n_layers=2, n_heads=2, prompt_len=8)
    parent = QObject()
    hidden = Turns(parent, before=lambda: False)         # a hidden panel's drawing: its parts wait to be shown
    hidden.start(iter([None, None]))
    gone_parent = QObject()
    gone = Turns(gone_parent)
    gone.start(iter([None] * 1000))
    gone.pause()                                          # a test's turns run by hand: none due by itself
    gone.step()                                           # one ran by hand, the next due
    assert turns.pending()
    shiboken6.delete(gone_parent)                         # deleted with its parent, a part still due
    qtbot.waitUntil(lambda: not turns.pending(), timeout=10_000)
    assert hidden.running                                 # its parts kept for when it is shown
    filler, _started, _first = spied_filler(parent)
    filler.start(trace, None, False, "weights")
    qtbot.waitUntil(lambda: not filler.running, timeout=60_000)
    assert filler.done == filler.total == 4


def test_the_grid_starts_no_tile_while_the_model_runs_a_persons_request_and_then_fills_exactly(qtbot):
    """A 2-token Run right after a 3,871-token one took 2.06 s in the model (62 ms alone): the long trace's grid
    still filled beside it, and the model's torch calls waited on the grid's threads for Python's lock (drive26)."""
    from explorer.app.thread import person_request

    trace = build_trace(n_layers=3, n_heads=4, prompt_len=12)
    parent = QObject()
    filler, started, first = spied_filler(parent)
    with person_request.running_one(True):
        filler.start(trace, None, False, "weights")
        assert not first.wait(WAIT_S), f"tiles started while a person's request ran: {started}"
    qtbot.waitUntil(lambda: not filler.running, timeout=60_000)
    assert filler.done == filler.total == 12 and sorted(set(started)) == sorted(started)
    for (layer, head), tile in expected_tiles(trace).items():
        np.testing.assert_allclose(filler.shown.tile(layer, head), tile, rtol=1e-5, atol=1e-6, equal_nan=True)


def test_a_views_background_job_waits_while_the_model_runs_a_persons_request_and_then_ends(qtbot):
    """The large map's block maxima (long_head), a derivation's cell and an export run as widgets.grid_filler's
    Background jobs: between blocks of rows they wait while a person's request runs, as the grid does. A short Run
    after a 4,000-token one took 107 ms in the model against 92 ms alone while they computed (bench_app)."""
    from explorer.app.thread import person_request
    from explorer.app.widgets.grid_filler import Background

    parent = QObject()
    job = Background(parent)
    blocks, results = [], []
    job.done.connect(lambda _generation, result: results.append(result))

    def work(cancelled) -> int:
        for block in range(3):
            if cancelled():
                return -1
            blocks.append(block)
        return len(blocks)

    with person_request.running_one(True):
        job.run(work)
        qtbot.wait(int(WAIT_S * 1000))
        assert blocks == [], f"blocks ran while a person's request ran: {blocks}"
    qtbot.waitUntil(lambda: results == [3], timeout=10_000)
    with person_request.running_one(True):                 # cancelled while it waits: it ends at once
        job.run(work)
        qtbot.wait(100)
        job.cancel()
        qtbot.waitUntil(lambda: len(results) == 2, timeout=10_000)
    assert results[1] == -1 and blocks == [0, 1, 2]
