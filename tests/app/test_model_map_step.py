"""A decoding step does not build the model map again: the boxes, lines and labels drawn for the prompt stay
the same items, and what they say is the step's: every shape read off the bundled GQA twin's config.json by hand
(d = hidden_size, N_Q = num_attention_heads, N_KV = num_key_value_heads, d_h = head_dim) for T = the prompt's
tokens (the tokenizer's count) plus the steps, with no label left at the prompt's T. Stepping rebuilt the whole
diagram (175 ms at 1920x1080); a box clicked between two steps must be the box still shown.
"""
from __future__ import annotations

import json
from pathlib import Path

from PySide6.QtWidgets import QGraphicsPathItem, QGraphicsTextItem

import explorer
from explorer.app.panels.model_map import NEW_ROW, ModelMapPanel
from explorer.app.state.session import Session
from tests.app.shared_window import make

CONFIG = json.loads((Path(__file__).resolve().parents[2] / "resources" / "models" / "shakespeare-gqa"
                     / "config.json").read_text())
PROMPT = "To be, or not to be"


def shown_labels(panel) -> list[str]:
    """The texts standing free in the scene (the edges' shapes and the blocks' headings), as read: N_Q as NQ."""
    return [i.toPlainText() for i in panel.scene.items() if isinstance(i, QGraphicsTextItem) and i.parentItem() is None]


def test_a_step_updates_the_drawn_items_with_the_configs_shapes(qtbot):
    model = explorer.load("shakespeare-gqa")
    prompt_tokens = len(model.encode(PROMPT))
    session = Session()
    panel = make(qtbot, session, ModelMapPanel)
    first = model.run(PROMPT).trace
    session.set_model(first.model)
    session.set_trace(first)
    qtbot.waitUntil(lambda: panel.graph is not None and panel.graph.tokens == prompt_tokens)
    drawn = set(panel.scene.items())
    d, n_q, n_kv, d_h = (CONFIG[k] for k in ("hidden_size", "num_attention_heads", "num_key_value_heads", "head_dim"))
    for steps in (1, 2):
        session.set_trace(model.run(PROMPT, steps=steps).trace)
        T = prompt_tokens + steps
        qtbot.waitUntil(lambda: panel.graph.tokens == T)
        assert set(panel.scene.items()) == drawn, "the step drew new items instead of updating the drawn ones"
        labels = shown_labels(panel)
        streams = labels.count(f"T×d = {T}×{d}")
        assert streams >= 4 * CONFIG["num_hidden_layers"], labels
        assert labels.count(f"NQ×T×dv = {n_q}×{T}×{d_h}") == CONFIG["num_hidden_layers"], labels
        assert not [text for text in labels if f"= {T - 1}×" in text or f"×{T - 1}×" in text], labels
        attention = [item for item in panel.items.values() if item.node.kind == "attention"]
        assert len(attention) == CONFIG["num_hidden_layers"]
        assert all(f"K, V: N_KV×T×d_h = {n_kv}×{T}×{d_h}" in item.toolTip() for item in attention)
        teal = [i for i in panel.scene.items() if isinstance(i, QGraphicsPathItem) and i.pen().color() == NEW_ROW]
        assert len(teal) == len([e for e in panel.graph.edges if not e.residual])
