"""A run of its prompt alone (step 0, no token decoded) has nothing to animate: the KV cache's and the attention's
animation actions are greyed with the reason as their tip, and asked anyway (the action of a trace replaced since)
they say so in one sentence before any dialog asks for a file. Before, the KV cache wrote a GIF of one frame
without a word."""
from __future__ import annotations

import pytest

from explorer.app.figures import export_dialogs, kv_animation
from explorer.app.figures.animation import ask_and_export_animation
from explorer.app.panels.attention import AttentionPanel
from explorer.app.panels.kv_cache import KVCachePanel
from explorer.app.state.session import Session
from tests.app.synthetic_trace import build_trace


def animation_action(panel):
    found = [action for action in panel.export_actions() if "animation" in action.text()]
    assert len(found) == 1, [action.text() for action in panel.export_actions()]
    return found[0]


@pytest.mark.parametrize("panel_class", [KVCachePanel, AttentionPanel])
def test_a_prompt_alone_greys_the_animation_and_its_tip_says_why(qtbot, panel_class):
    session = Session()
    panel = panel_class(session)
    qtbot.addWidget(panel)
    prompt_only = build_trace(prompt_len=6, steps=0)
    assert prompt_only.n_steps == 1
    session.set_model(prompt_only.model)
    session.set_trace(prompt_only)
    action = animation_action(panel)
    assert not action.isEnabled(), "a single frame is offered as an animation"
    tip = action.toolTip()
    assert "step 0" in tip and "single frame" in tip and tip.count(". ") == 0, tip
    assert action.statusTip() == tip
    decoded = build_trace(prompt_len=6, steps=2)
    session.set_trace(decoded)
    assert action.isEnabled() and "single frame" not in action.toolTip() and action.statusTip() == ""


@pytest.mark.parametrize("ask", [lambda panel, trace: kv_animation.ask_and_export_kv_animation(panel, trace),
                                 lambda panel, trace: ask_and_export_animation(panel, trace, 0, 0)],
                         ids=["kv cache", "attention"])
def test_asked_anyway_it_says_so_before_asking_for_a_file(qtbot, monkeypatch, tmp_path, ask):
    session = Session()
    panel = KVCachePanel(session)
    qtbot.addWidget(panel)
    prompt_only = build_trace(prompt_len=6, steps=0)
    session.set_model(prompt_only.model)
    session.set_trace(prompt_only)
    asked, said = [], []
    monkeypatch.setattr(export_dialogs, "ask_path", lambda *a, **k: asked.append(a) or tmp_path / "one.gif")
    monkeypatch.setattr(export_dialogs, "ask_size", lambda *a, **k: (320, 240))
    session.error_raised.connect(said.append)
    ask(panel, prompt_only)
    assert asked == [] and not (tmp_path / "one.gif").exists(), "a single frame was written"
    assert len(said) == 1 and "step 0" in said[0] and "single frame" in said[0], said
