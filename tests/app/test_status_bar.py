"""The status bar's trace memory: equal to Trace.nbytes(), measuring only the step records it has not seen."""
from __future__ import annotations

from explorer.app.window.status_bar import StatusLine, human_bytes
from explorer.core import trace as trace_module
from explorer.core.trace import StepRecord, Trace
from tests.app.synthetic_trace import build_trace


def test_trace_memory_matches_nbytes_and_measures_each_record_once(qtbot, monkeypatch):
    line = StatusLine()
    qtbot.addWidget(line)
    full = build_trace(n_layers=3, n_heads=4, n_kv_heads=2, prompt_len=6, steps=4)
    expected = {id(step): trace_module.nbytes_of(step) for step in full.steps}
    measured = []
    real = trace_module.nbytes_of
    monkeypatch.setattr(trace_module, "nbytes_of",
                        lambda obj, seen=None: (isinstance(obj, StepRecord) and measured.append(obj),
                                                real(obj, seen))[1])
    for n in range(1, full.n_steps + 1):
        trace = Trace(model=full.model, steps=full.steps[:n], rope_inv_freq=full.rope_inv_freq)
        line.show_trace(trace)
        assert line.fields["memory"].text() == f"trace {human_bytes(sum(expected[id(s)] for s in trace.steps))}"
    assert measured == list(full.steps), "each step record is measured once, when it first appears"
    shorter = Trace(model=full.model, steps=full.steps[:2], rope_inv_freq=full.rope_inv_freq)
    line.show_trace(shorter)                                 # Back: nothing new to measure
    assert line.fields["memory"].text() == f"trace {human_bytes(shorter.nbytes())}"
    assert len(measured) == full.n_steps


def test_the_step_field_counts_tokens_as_a_person_reads_them(qtbot):
    line = StatusLine()
    qtbot.addWidget(line)
    one = build_trace(n_layers=1, n_heads=2, n_kv_heads=1, prompt_len=1, steps=0)
    line.show_trace(one)
    assert one.n_tokens == 1 and line.fields["step"].text().endswith(" · 1 token")
    many = build_trace(n_layers=1, n_heads=2, n_kv_heads=1, prompt_len=3, steps=1)
    line.show_trace(many)
    assert line.fields["step"].text().endswith(f" · {many.n_tokens} tokens")
