"""A switch from a decoder to an encoder leaves nothing of the decoder's cache in the KV cache panel.

Driving the app on bare Xvfb: SmolLM2's (or Gemma's) per-layer plot, blocks and MQA legend stayed up under
MiniLM, below the line "An encoder keeps no KV cache".
"""
from __future__ import annotations

from explorer.app.panels.kv_cache import KVCachePanel
from explorer.app.state.session import Session
from tests.app.synthetic_trace import build_trace


def test_an_encoder_after_a_decoder_shows_no_cache_plots(qtbot):
    session = Session()
    panel = KVCachePanel(session)
    qtbot.addWidget(panel)
    panel.resize(900, 500)
    panel.show()
    qtbot.waitExposed(panel)
    decoder = build_trace(prompt_len=6, steps=2)
    session.set_model(decoder.model)
    session.set_trace(decoder)
    qtbot.waitUntil(lambda: not panel.drawing)
    assert panel.drawn().kind == "trace"
    assert panel.plots.isVisibleTo(panel) and panel.layer_plot.listDataItems(), "the decoder's cache is not drawn"

    encoder = build_trace(encoder_only=True, prompt_len=6)
    session.set_model(encoder.model)
    session.set_trace(encoder)
    qtbot.waitUntil(lambda: not panel.drawing)
    drawn = panel.drawn()
    assert drawn.kind == "empty" and "encoder" in drawn.why and "no KV cache" in drawn.why, drawn
    assert panel.note.isVisibleTo(panel) and drawn.why in panel.note.text()
    assert not panel.body_widget.isVisibleTo(panel), "the decoder's plots stay up under the encoder"

    session.set_model(decoder.model)                 # and back: the decoder's cache drawn again
    session.set_trace(decoder)
    qtbot.waitUntil(lambda: not panel.drawing)
    assert panel.drawn().kind == "trace" and panel.plots.isVisibleTo(panel)
