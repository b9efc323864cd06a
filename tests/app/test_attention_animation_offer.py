"""Attention ▸ Export every step as an animation is offered only where there are steps: an encoder reads its text
in one pass, and with MiniLM open the action wrote a GIF of one frame (seen driving the app on Xvfb)."""
from __future__ import annotations

from explorer.app.panels.attention import AttentionPanel
from explorer.app.state.session import Session
from tests.app.synthetic_trace import build_trace


def test_the_steps_animation_is_greyed_for_an_encoder_and_offered_for_a_decoder(qtbot):
    session = Session()
    panel = AttentionPanel(session)
    qtbot.addWidget(panel)
    encoder = build_trace(encoder_only=True, prompt_len=6)
    session.set_model(encoder.model)
    session.set_trace(encoder)
    found = [action for action in panel.export_actions() if "every step as an animation" in action.text()]
    assert len(found) == 1, [action.text() for action in panel.export_actions()]
    action = found[0]
    assert not action.isEnabled() and action.toolTip(), "an encoder's one step is offered as an animation"
    decoder = build_trace(prompt_len=6, steps=2)
    session.set_model(decoder.model)
    session.set_trace(decoder)
    assert action.isEnabled(), "a decoder's steps are not offered as an animation"
