"""The first raise of a tab at 8,000 tokens does not do its heavy work in one turn of the event loop on the GUI
thread (issue 22, "switching tabs never blocks for more than 100 ms"), and ends up drawing what the one-shot
drawing draws; an answer for a trace replaced meanwhile is never drawn."""
from __future__ import annotations

import threading

import numpy as np
import pytest

from explorer.app.panels import derivation as derivation_panel
from explorer.app.panels.derivation import DerivationPanel
from explorer.core.intervention import active
from explorer.views.cell_derivation import CellAsked, derive
from tests.app.shared_window import make

LAYER, HEAD, ROW = 1, 2, 5000


@pytest.fixture
def derive_threads(monkeypatch):
    """The threads the panel derived its cells on, and the traces of the cells it drew."""
    seen = {"threads": [], "drawn": []}

    def recording(asked):
        seen["threads"].append(threading.current_thread() is threading.main_thread())
        return derive(asked)

    show = getattr(DerivationPanel, "_show_cell", None)

    def drawing(panel, cell):
        seen["drawn"].append(cell.asked.trace)
        show(panel, cell)

    monkeypatch.setattr(derivation_panel, "derive", recording, raising=False)
    monkeypatch.setattr(DerivationPanel, "_show_cell", drawing, raising=False)
    return seen


def test_show_the_work_derives_a_long_cell_off_the_gui_thread_and_draws_the_one_shot_cell(
        qtbot, t_session, traces_8000, derive_threads):
    first, _, last = traces_8000
    t_session.select(layer=LAYER, head=HEAD, token=ROW)
    t_session.set_trace(last)
    panel = make(qtbot, t_session, DerivationPanel)                   # built and shown: its first raise
    assert panel.derived is None and "deriving" in panel.readout.text(), "no working state while it derives"
    qtbot.waitUntil(lambda: panel.derived is not None, timeout=60_000)
    assert derive_threads["threads"] and not any(derive_threads["threads"]), "a long cell derived on the GUI thread"
    one_shot = derive(CellAsked(last, LAYER, HEAD, last.n_steps - 1, ROW, (ROW, None), None, None,
                                active(t_session.experiments)))
    assert (panel.derived.row, panel.derived.column) == (one_shot.row, one_shot.column)
    assert panel.derived.weight == one_shot.derived.weight
    np.testing.assert_array_equal(panel.map.image.image, one_shot.matrix)
    assert panel.offset == (one_shot.top, one_shot.left) and panel.readout.text() == one_shot.note
    assert panel.map.highlighted == (one_shot.row - one_shot.top, one_shot.column - one_shot.left)


def test_a_long_cell_of_a_trace_replaced_meanwhile_is_never_drawn(qtbot, t_session, traces_8000, derive_threads):
    first, _, last = traces_8000
    t_session.select(layer=LAYER, head=HEAD, token=ROW)
    t_session.set_trace(last)
    panel = make(qtbot, t_session, DerivationPanel)
    t_session.set_trace(first)                                        # a new trace before the cell of `last` came
    qtbot.waitUntil(lambda: panel.derived is not None, timeout=60_000)
    assert derive_threads["drawn"] and all(trace is first for trace in derive_threads["drawn"]), \
        "a cell of the trace replaced was drawn"
    assert panel.derived.upto_step == first.n_steps - 1
