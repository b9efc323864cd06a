"""The Model map panel on a real Session: the bundled models' config.json is the expectation.

ModelInfo is written here from each bundled config.json by hand (what the loader reports is tested
in tests/core), so the map is checked against the config, not against the code that drew it.
"""
from __future__ import annotations

import json
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from PySide6.QtGui import QColor, QImage
from PySide6.QtWidgets import QGraphicsTextItem

from explorer.app.panels.model_map import ACCENT, EMPTY, NEW_ROW, ModelMapPanel
from explorer.app.state.session import Session
from explorer.app.widgets.model_call import thread_executor
from explorer.core.config import ModelConfig
from explorer.core.trace import ModelInfo
from explorer.drawing.export import ExportError
from explorer.views.model_graph import model_graph
from tests.app.fake_core import FakeTokenizer
from tests.app.fake_core import model_info as fake_info
from tests.app.shared_window import make, make_window
from tests.app.synthetic_trace import build_trace

MODELS = Path(__file__).resolve().parents[2] / "resources" / "models"


def bundled(name: str) -> tuple[dict, ModelInfo]:
    """A bundled model's config.json and the ModelInfo it describes, read off the config by hand."""
    config = json.loads((MODELS / name / "config.json").read_text())
    heads, layers = config["num_attention_heads"], config["num_hidden_layers"]
    mla = bool(config.get("kv_lora_rank"))
    kv = heads if mla else config.get("num_key_value_heads", heads)
    kind = "mla" if mla else "mha" if kv == heads else "mqa" if kv == 1 else "gqa"
    d_qk = config["qk_nope_head_dim"] + config["qk_rope_head_dim"] if mla else config["head_dim"]
    info = ModelInfo(name=name, family=config["model_type"], attention=kind, n_layers=layers, n_heads=heads,
                     n_kv_heads=kv, d_model=config["hidden_size"], d_qk=d_qk,
                     d_v=config["v_head_dim"] if mla else config["head_dim"], vocab_size=config["vocab_size"],
                     max_positions=config["max_position_embeddings"], n_params=0, dtype="float32", device="cpu",
                     layer_kinds=("causal",) * layers, mla_rank=config.get("kv_lora_rank"),
                     mla_rope_dim=config.get("qk_rope_head_dim") if mla else None)
    return config, info


@pytest.fixture
def session(qtbot):
    return Session()


def texts(panel) -> list[str]:
    return [item.toPlainText() for item in panel.scene.items() if isinstance(item, QGraphicsTextItem)]


def test_no_model_shows_an_explicit_empty_state_and_a_switch_keeps_nothing_of_the_last_model(qtbot, session):
    panel = make(qtbot, session, ModelMapPanel)
    assert panel.note.isVisible() and panel.note.text() == EMPTY and not panel.scene.items()
    _, gqa = bundled("shakespeare-gqa")
    session.set_model(gqa)
    assert not panel.note.isVisible() and any("GQA" in t for t in texts(panel))
    _, mla = bundled("shakespeare-mla")
    session.set_model(mla)
    assert not any("GQA" in t for t in texts(panel)), "the previous model's map stayed up"
    assert any("MLA" in t for t in texts(panel)) and all(n.attention.kind == "MLA"
                                                         for n in panel.graph.of_kind("attention"))
    session.set_model(None)
    assert panel.note.isVisible() and panel.note.text() == EMPTY
    assert panel.graph is None and not panel.scene.items()


def test_the_map_names_grouping_and_carries_the_prompts_shapes(qtbot, session):
    config, info = bundled("shakespeare-gqa")
    panel = make(qtbot, session, ModelMapPanel)
    session.set_model(info)
    tokens = FakeTokenizer().encode("to be or")
    session.set_tokens(tokens)
    t, d = len(tokens.ids), config["hidden_size"]
    group = config["num_attention_heads"] // config["num_key_value_heads"]
    attention = panel.graph.of_kind("attention")
    assert len(attention) == config["num_hidden_layers"]
    assert all(f"{group} per K/V head" in n.label for n in attention)
    drawn = texts(panel)
    assert f"T×d = {t}×{d}" in drawn
    assert f"NQ×T×dv = {config['num_attention_heads']}×{t}×{config['head_dim']}" in drawn
    assert f"T×V = {t}×{config['vocab_size']}" in drawn


def test_the_models_config_comes_from_the_model_thread_and_refines_the_ffn(qtbot, session):
    config, info = bundled("shakespeare-mla")
    panel = ModelMapPanel(session)
    panel.executor = thread_executor(SimpleNamespace(config=ModelConfig.from_hf(config)))
    qtbot.addWidget(panel)
    panel.resize(900, 600)
    panel.show()
    session.set_model(info)
    qtbot.waitUntil(lambda: panel.config is not None, timeout=5000)
    ffn = panel.graph.of_kind("ffn")
    dense = config["first_k_dense_replace"]                   # DeepSeek: layers below it keep a dense FFN
    assert [n.layers[0] for n in ffn] == list(range(min(dense, config["num_hidden_layers"])))
    assert all(f"d_ff={config['intermediate_size']}" in n.detail for n in ffn)
    assert all(f"d_c={config['kv_lora_rank']}" in n.label for n in panel.graph.of_kind("attention"))


def test_the_selection_lights_its_block_and_names_the_heads_kv_head(qtbot, session):
    config, info = bundled("shakespeare-gqa")
    panel = make(qtbot, session, ModelMapPanel)
    session.set_model(info)
    session.select(layer=2, head=4)
    group = config["num_attention_heads"] // config["num_key_value_heads"]
    for item in panel.items.values():
        lit = 2 in item.node.layers
        assert (item.pen().color() == ACCENT) == lit, item.node.key
    (attention,) = [i for i in panel.items.values() if i.node.kind == "attention" and i.node.layers == (2,)]
    assert f"head 4 reads K/V head {4 // group}" in attention.text.toPlainText()
    assert "layer 2 · head 4" in panel.readout.text()


def test_thirty_layers_fold_and_the_selected_block_unfolds_quickly(qtbot, session):
    _, small = bundled("shakespeare-mqa")
    deep = ModelInfo(**{**small.__dict__, "n_layers": 32, "layer_kinds": ("causal",) * 32})
    panel = make(qtbot, session, ModelMapPanel)
    session.set_model(deep)
    assert panel.graph.block_layers() == [0] and len(panel.graph.of_kind("fold")) == 1
    started = time.perf_counter()
    session.select(layer=20)
    elapsed = time.perf_counter() - started
    assert panel.graph.block_layers() == [20]
    assert [n.layers for n in panel.graph.of_kind("fold")] == [tuple(range(20)), tuple(range(21, 32))]
    assert any("20 × block" in t for t in texts(panel))
    assert elapsed < 0.5, f"the map took {elapsed * 1000:.0f} ms to redraw around the selected block"


def test_a_click_selects_the_layer_and_brings_its_panel_forward(qtbot, tmp_path):
    window = make_window(qtbot, tmp_path)
    panel = window.docks["model_map"].widget()
    panel.executor = thread_executor(SimpleNamespace(config=None))      # the fake core has no model to ask
    window.session.set_model(fake_info())
    window.docks["mask"].raise_()
    qtbot.waitUntil(lambda: window.docks["qkv"].visibleRegion().isEmpty())
    w_o = next(n for n in model_graph(fake_info()).nodes if n.kind == "w_o" and n.layers == (1,))
    panel.open_node(w_o)
    assert window.session.selection.layer == 1
    qtbot.waitUntil(lambda: not window.docks["qkv"].visibleRegion().isEmpty())
    attention = next(n for n in model_graph(fake_info()).nodes if n.kind == "attention" and n.layers == (0,))
    panel.open_node(attention)
    assert window.session.selection.layer == 0
    qtbot.waitUntil(lambda: not window.docks["attention"].visibleRegion().isEmpty())
    window.close()


def test_exports_the_whole_map_as_png_and_svg(qtbot, session, tmp_path):
    panel = make(qtbot, session, ModelMapPanel)
    with pytest.raises(ExportError, match="no model is open"):
        panel.save(tmp_path / "map.png")
    _, info = bundled("shakespeare-gqa")
    session.set_model(info)
    png = panel.save(tmp_path / "map.png")
    image = QImage(str(png)).convertToFormat(QImage.Format.Format_RGB32)
    rect = panel.scene.sceneRect()
    assert (image.width(), image.height()) == (int(rect.width() * 2), int(rect.height() * 2))
    pixels = np.frombuffer(image.constBits(), np.uint32, image.width() * image.height())
    assert (pixels == QColor(ACCENT).rgb()).any(), "the selected block's outline is in the picture"
    svg = panel.save(tmp_path / "map.svg").read_text()
    assert svg.startswith("<?xml") and "<svg" in svg and "RMSNorm" in svg
    with pytest.raises(ExportError, match="must end in"):
        panel.save(tmp_path / "map.gif")


def test_a_decoding_step_shows_where_the_new_row_flows(qtbot, session):
    from PySide6.QtWidgets import QGraphicsPathItem

    panel = make(qtbot, session, ModelMapPanel)

    def teal_edges() -> int:
        return sum(item.pen().color() == NEW_ROW for item in panel.scene.items() if isinstance(item, QGraphicsPathItem))

    prefill = build_trace(n_layers=2, n_heads=4, n_kv_heads=2, prompt_len=5)
    session.set_model(prefill.model)
    session.set_trace(prefill)
    assert teal_edges() == 0 and "new token" not in panel.readout.text()
    stepped = build_trace(n_layers=2, n_heads=4, n_kv_heads=2, prompt_len=5, steps=2)
    session.set_trace(stepped)
    streams = [e for e in panel.graph.edges if not e.residual]
    assert teal_edges() == len(streams)
    assert f"position {stepped.n_tokens - 1}) flows" in panel.step_note.document.toPlainText()
    assert f"T×d = {stepped.n_tokens}×{stepped.model.d_model}" in texts(panel)
