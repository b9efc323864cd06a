"""The KV cache's animation is offered only where there is a cache to grow: not for an encoder.

Driving the app on Xvfb with MiniLM open, KV cache ▸ Export an animation of the cache growing was enabled, and
chosen it asked for a file name and a size only to answer "Cannot export …: an encoder keeps no KV cache".
"""
from __future__ import annotations

from explorer.app.panels.kv_cache import KVCachePanel
from explorer.app.state.session import Session
from tests.app.synthetic_trace import build_trace


def animation_action(panel):
    found = [action for action in panel.export_actions() if "animation" in action.text()]
    assert len(found) == 1, [action.text() for action in panel.export_actions()]
    return found[0]


def test_the_cache_animation_is_greyed_for_an_encoder_and_offered_for_a_decoder(qtbot):
    session = Session()
    panel = KVCachePanel(session)
    qtbot.addWidget(panel)
    encoder = build_trace(encoder_only=True, prompt_len=6)
    session.set_model(encoder.model)
    session.set_trace(encoder)
    action = animation_action(panel)
    assert not action.isEnabled(), "an encoder's cache animation is offered"
    decoder = build_trace(prompt_len=6, steps=2)
    session.set_model(decoder.model)
    session.set_trace(decoder)
    assert action.isEnabled(), "a decoder's cache animation is greyed"
