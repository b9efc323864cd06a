"""The session's state without Qt: it imports without PySide6, its setters report a change only when there is
one, and the selection stays inside the trace it is read against (the expectations are the trace's sizes)."""
from __future__ import annotations

import dataclasses
import subprocess
import sys

from explorer.app.state.session_model import RUN, TRACE, SessionModel
from explorer.core.intervention import HeadAblation, Intervention
from tests.app.synthetic_trace import build_trace


def test_the_state_imports_without_qt():
    code = ("import sys, explorer.app.state.session_model; "
            "print(sorted(m for m in ('PySide6', 'pyqtgraph', 'torch') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_setters_say_nothing_when_nothing_changed():
    state = SessionModel()
    trace = build_trace(n_layers=2, n_heads=4, prompt_len=6)
    assert state.set_trace(trace) == RUN and state.set_trace(trace) is None and state.trace_id == 1
    assert state.assign("busy", True) and not state.assign("busy", True)
    assert state.assign("out_of_date", "edited") and not state.assign("out_of_date", "edited")
    experiments = state.with_experiment(Intervention(ablations=(HeadAblation(1, 3),)))
    assert state.set_experiments(experiments) and not state.set_experiments(list(experiments))
    assert state.select(token=2, layer=1) and not state.select(token=2, layer=1)


def test_a_step_of_the_same_run_is_a_trace_change():
    state = SessionModel()
    first = build_trace(prompt_len=5, steps=2)
    state.set_trace(first)
    stepped = dataclasses.replace(first, steps=first.steps[:2], _cache={})   # stepped back: the same prefill
    assert state.set_trace(stepped) == TRACE


def test_the_selection_stays_inside_the_trace_and_a_key_belongs_to_its_row():
    state = SessionModel()
    trace = build_trace(n_layers=2, n_heads=4, prompt_len=6)
    state.set_trace(trace)
    state.select(token=99, layer=7, head=-3)
    assert (state.selection.token, state.selection.layer, state.selection.head) == (trace.n_tokens - 1, 1, 0)
    state.select(token=4, key=2)
    assert state.selection.cell == (4, 2)
    state.select(layer=0)                       # another head: the same cell of its map
    assert state.selection.cell == (4, 2)
    state.select(token=3)                       # another row: the key clicked in row 4 is not row 3's
    assert state.selection.key is None and state.selection.cell is None
