"""The Residual stream panel at 8,000 tokens reads the asked position through the model thread's decoder (its KV
cache lent to the job): it shows that position's numbers, equal to the prefix run's, and never another's."""
from __future__ import annotations

import threading

import numpy as np

from explorer.app.panels.residual import NORMS, ResidualPanel
from explorer.app.thread.core_api import CoreApi, lending
from explorer.app.thread.decode_loop import DecodeLoop
from explorer.app.thread.emitter import Emitter
from explorer.app.thread.request_queue import RequestQueue
from explorer.app.thread.requests import ModelJob
from tests.app.shared_window import make
from tests.app.test_panels_long_prompt import N


def lent_executor(loaded, decoder):
    """What the model thread does with a panel's job (DecodeLoop._model_job), on a thread of its own."""
    def execute(work) -> None:
        def run() -> None:
            with lending(decoder):
                work(loaded, lambda: False)
        threading.Thread(target=run, daemon=True, name="model-call").start()
    return execute


def fed_rows(decoder, monkeypatch) -> list:
    """(tokens fed, the last one's position) of every forward pass of the decoder's model from now on."""
    fed, forward = [], decoder.model.forward

    def spy(ids, positions, cache=None, capture=None, intervention=None):
        fed.append((len(ids), int(positions[-1])))
        return forward(ids, positions, cache, capture, intervention)

    monkeypatch.setattr(decoder.model, "forward", spy)
    return fed


def shown_norms(panel) -> list[list[str]]:
    """The table's three norm rows (layers across), as text."""
    first = panel.table.rowCount() - len(NORMS)
    return [[panel.table.item(row, layer).text() for layer in range(panel.table.columnCount())]
            for row in range(first, first + len(NORMS))]


def test_the_panel_shows_each_asked_positions_stream_read_through_the_cache(qtbot, t_session, decoder_8000,
                                                                            monkeypatch):
    from explorer.core.attribution import residual_stream

    trace, ids = decoder_8000.trace, np.asarray(decoder_8000.trace.token_ids)
    panel = make(qtbot, t_session, ResidualPanel)
    panel.executor = lent_executor(decoder_8000.loaded, decoder_8000)
    fed = fed_rows(decoder_8000, monkeypatch)
    t_session.set_trace(trace)                                                    # asks for the last token
    for position in (5000, N - 1):
        before = len(fed)
        t_session.select(token=position)
        assert panel.stream is None and panel.table.item(0, 0) is None          # nothing stale while it is read
        qtbot.waitUntil(lambda: panel.stream is not None, timeout=30000)
        assert panel.stream.position == position and f"position {position} (" in panel.formula
        assert (1, position) in fed[before:] and all(n == 1 for n, _ in fed[before:])   # one token each time
        want = residual_stream(decoder_8000.loaded, ids, position)                    # the prefix run
        assert shown_norms(panel) == [[f"{float(v):.0f}" for v in getattr(want, name)] for name, _ in NORMS]
        assert panel.table.item(0, 0).text() == f"t{int(want.lens_ids[0, 0])}"
    assert decoder_8000.trace is trace and decoder_8000.kv_cache.length == N


def test_the_model_thread_lends_its_decoder_to_a_panels_job_and_only_while_it_runs():
    from explorer.app.thread import core_api

    loop = DecodeLoop(RequestQueue(), Emitter(), CoreApi(load_model=None, make_decoder=None, sampling=None,
                                                         available_devices=None))
    loop._state.loaded, loop._state.decoder = "the model", "its decoder"
    seen = []
    loop._model_job(ModelJob(job=lambda loaded, cancelled: seen.append((loaded, core_api._DECODER.get()))))
    assert seen == [("the model", "its decoder")] and core_api._DECODER.get() is None
