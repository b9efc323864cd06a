"""A grid filler deleted while its thread fills the grid (the app closing at 8,000 tokens) gets no tile, and
its thread says nothing and stops: the signals it would emit have gone with it."""
from __future__ import annotations

import sys
import threading

import numpy as np
import shiboken6

from explorer.app.thread import threads
from explorer.app.widgets.grid_filler import GridFiller
from tests.app.synthetic_trace import build_trace


def test_a_grid_filler_deleted_while_its_tiles_are_computed_says_nothing_and_stops(qapp, monkeypatch, capfd):
    trace = build_trace(n_layers=2, n_heads=2, prompt_len=6)
    filler = GridFiller()
    asked, release, started, errors = [], threading.Event(), [], []
    start_thread = threads.start

    def tile(trace, layer, heads, *args):
        asked.append((layer, heads[0]))
        release.wait(10)                          # the window is torn down meanwhile
        return np.zeros((1, 1), np.float32)

    def start(target, name, stop=lambda: None):
        def guarded():
            try:
                target()
            except BaseException as error:        # what would print a traceback in the grid's thread
                errors.append(error)
        started.append(start_thread(guarded, name, stop))
        return started[-1]

    monkeypatch.setattr(filler.tiles, "get", tile)
    monkeypatch.setattr(threads, "start", start)       # the grid's thread, and what it raises
    filler.start(trace, None, False, "weights")
    assert len(started) == 1 and filler.running
    shiboken6.delete(filler)
    release.set()
    started[0].join(10)
    assert not started[0].is_alive()
    assert errors == []
    assert asked == [(0, 0)], f"the thread went on computing tiles for a deleted grid: {asked}"
    qapp.processEvents()
    sys.stderr.flush()
    assert "Traceback" not in capfd.readouterr().err
