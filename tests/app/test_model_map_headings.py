"""Model map: every block's column is headed by its layer, so "click the FFN of layer 3" (the block stop's
question) can be done without counting columns; in an encoder–decoder the heading names the stack too.

The expectation is the config (bundled config.json's layer count) and the geometry of the drawn boxes: the
heading "layer ℓ" sits just above, and over the same x as, the box of layer ℓ's FFN.
"""
from __future__ import annotations

import dataclasses
import json

from explorer.app.panels.model_map import ModelMapPanel
from explorer.app.state.session import Session
from explorer.app.widgets.model_map_layout import headings, lay_out
from explorer.views.model_graph import model_graph
from tests.app.shared_window import make
from tests.app.test_model_map import MODELS, bundled


def heading_over(panel, text: str):
    return [h for h in panel.headings if h.toPlainText() == text]


def test_each_block_column_is_headed_by_its_layer_above_its_boxes(qtbot):
    session = Session()
    panel = make(qtbot, session, ModelMapPanel)
    config, info = bundled("shakespeare-gqa")
    session.set_model(info)
    layers = config["num_hidden_layers"]
    ffns = {n.layers[0]: panel.items[n.key] for n in panel.graph.of_kind("ffn")}
    assert sorted(ffns) == list(range(layers))
    for layer in range(layers):
        found = heading_over(panel, f"layer {layer}")
        assert len(found) == 1, f"layer {layer}: headings {[h.toPlainText() for h in panel.headings]}"
        heading, ffn = found[0].sceneBoundingRect(), ffns[layer].sceneBoundingRect()
        column = [i.mapRectToScene(i.rect()) for i in panel.items.values() if layer in i.node.layers]
        assert heading.left() <= ffn.center().x() <= heading.left() + ffn.width(), "heading not over its column"
        assert heading.bottom() <= min(r.top() for r in column) + 1, "heading overlaps its column's first box"
        assert panel.scene.sceneRect().contains(heading), "heading outside the scene (cut off at the top)"


def test_an_encoder_decoder_names_the_stack_in_each_heading():
    config = json.loads((MODELS / "translate-en-zh" / "config.json").read_text())
    _, gqa = bundled("shakespeare-gqa")
    info = dataclasses.replace(gqa, is_encoder_decoder=True, n_layers=config["n_decoder_layers"])
    graph = model_graph(info, config, tokens=5, source_tokens=7)
    names = [text for _x, _y, text in headings(graph, lay_out(graph))]
    assert sorted(names) == sorted([f"encoder layer {i}" for i in range(config["n_encoder_layers"])]
                                   + [f"decoder layer {i}" for i in range(config["n_decoder_layers"])])


def test_a_folded_model_heads_only_its_unfolded_block():
    _, gqa = bundled("shakespeare-gqa")
    info = dataclasses.replace(gqa, n_layers=30, layer_kinds=("causal",) * 30)
    graph = model_graph(info, None, tokens=5, selected_layer=17)
    assert [text for _x, _y, text in headings(graph, lay_out(graph))] == ["layer 17"]
