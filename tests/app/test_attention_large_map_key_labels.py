"""The attention panel's large map labels its first and its last key, and every key between, when its column
has the room (it dropped the last key's label: pyqtgraph left out a label whose width, measured lying down,
stuck out of the axis).

Expectation: the trace's own token texts, shortened as every axis shortens them (views.maps.short_label),
against the labels the map's key and query axes draw.
"""
from __future__ import annotations

from PySide6.QtWidgets import QApplication

from explorer.app.panels import AttentionPanel
from explorer.app.state.session import Session
from explorer.views.maps import short_label
from tests.app.shared_window import make
from tests.app.synthetic_trace import WORDS, build_trace
from tests.app.test_axis_labels import _drawn

N_TOKENS = 12


def test_the_large_map_draws_every_key_and_query_label_first_and_last_included(qtbot):
    session = Session()
    session.set_token_display(lambda token_id: WORDS[token_id])
    panel = make(qtbot, session, AttentionPanel)
    panel.resize(700, 700)
    trace = build_trace(n_layers=1, n_heads=2, prompt_len=N_TOKENS)
    session.set_trace(trace)
    QApplication.processEvents()
    expected = [short_label(text) for text in trace.token_text]
    assert len(expected) == N_TOKENS
    for name in ("top", "left"):
        drawn = [text for _, text in _drawn(panel.large.axes[name])]
        assert drawn == expected, f"{name}: {drawn} against {expected}"
