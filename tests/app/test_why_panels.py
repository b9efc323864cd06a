"""The Why-this-token panels around a real Session and a tiny model: what they show, what a click does,
and that each view is legible in a wide dock (1366x768's bottom row) and in a tall narrow one."""
from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtGui import QImage

from explorer.app.panels.atlas import AtlasPanel
from explorer.app.panels.attribution import AttributionPanel
from explorer.app.panels.derivation import DerivationPanel
from explorer.app.panels.residual import ResidualPanel, readable
from explorer.app.widgets.model_call import thread_executor
from explorer.views.cell_derivation import clicked_column
from tests.app.why_helpers import SIZES, answered, shown


def legible(panel) -> None:
    """Something is drawn: many colours, and a good share of pixels away from the background."""
    image = panel.grab().toImage().convertToFormat(QImage.Format.Format_RGB32)
    pixels = np.frombuffer(image.constBits(), dtype=np.uint32).reshape(image.height(), -1)[:, : image.width()]
    background = np.bincount((pixels & 0xFFFFFF).ravel() % 4099).argmax()
    assert len(np.unique(pixels)) > 30
    assert np.mean((pixels & 0xFFFFFF) % 4099 != background) > 0.05


def all_text(table) -> list[str]:
    return [table.item(r, c).text() for r in range(table.rowCount()) for c in range(table.columnCount())
            if table.item(r, c) is not None]


@pytest.mark.parametrize("layout", sorted(SIZES))
def test_attribution_draws_the_parts_and_a_click_selects_the_head(qtbot, session, traced_llama, layout):
    from explorer.core.attribution import attribute

    loaded, trace = traced_llama
    panel = answered(qtbot, AttributionPanel, session, traced_llama, layout)
    expected = attribute(loaded, trace.token_ids, trace.n_tokens - 1)
    np.testing.assert_allclose(panel.heads.image.image,
                               np.concatenate([expected.heads, expected.mlp[:, None]], axis=1), rtol=1e-6)
    assert f"z = {expected.logit:.3f}" in panel.caption.text() and "pre-norm" in panel.caption.text()
    assert "\xa0" not in panel.caption.text()
    panel.heads.on_click(1, 2)
    assert (session.selection.layer, session.selection.head) == (1, 2)
    legible(panel)


def test_attribution_of_a_chosen_token_at_a_prompt_position(qtbot, session, traced_llama):
    loaded, trace = traced_llama
    panel = shown(qtbot, AttributionPanel(session), SIZES["wide"])
    panel.executor = thread_executor(loaded)
    session.set_trace(trace)
    qtbot.waitUntil(lambda: panel.result is not None, timeout=20000)
    with qtbot.waitSignal(panel.asker.call.finished, timeout=20000):
        session.select(token=4)
    assert panel.result.position == 4
    assert panel.token_box.count() >= 2                       # top prediction, then the token that came next
    with qtbot.waitSignal(panel.asker.call.finished, timeout=20000):
        panel.token_box.setCurrentIndex(1)
    assert panel.result.token_id == int(trace.token_ids[5])


def _stream(n_layers: int, k: int = 5):
    from explorer.core.attribution import ResidualStream

    rng = np.random.default_rng(0)
    return ResidualStream(position=3, attn_norms=rng.random(n_layers), ffn_norms=rng.random(n_layers),
                          residual_norms=np.arange(n_layers, dtype=float),
                          lens_ids=rng.integers(0, 90, (n_layers, k)),
                          lens_probs=np.sort(rng.random((n_layers, k)))[:, ::-1])


@pytest.mark.parametrize("layout", sorted(SIZES))
def test_the_logit_lens_shows_every_layer_as_visible_text(qtbot, session, traced_llama, layout):
    panel = shown(qtbot, ResidualPanel(session), SIZES[layout])
    session.set_trace(traced_llama[1])                               # (its own answer is not asked for: no executor)
    panel._on_answer(("m", (1, 2, 3, 4)), _stream(30))
    qtbot.wait(50)
    table = panel.table
    headers = table.horizontalHeader() if panel.layers_across else table.verticalHeader()
    assert headers.count() == 30
    view = table.viewport().rect()
    for layer in range(30):              # each layer's first and last cell whole in view, scrolled to where need be
        for index in (0, 6):
            item = table.item(index, layer) if panel.layers_across else table.item(layer, index)
            table.scrollToItem(item)
            assert view.contains(table.visualItemRect(item)), (layer, index)
    texts = all_text(table)
    assert "⍽" in texts and not any("\xa0" in text or "\\x" in text for text in texts)
    legible(panel)


def test_readable_leaves_nothing_invisible():
    assert readable("\xa0x") == "⍽x" and readable("") == "∅"
    assert readable("a\u200bb") == "a⟨ZWSP⟩b" and readable("\u2028") == "⟨U+2028⟩"
    assert readable("␣Paris") == "␣Paris"


def test_residual_stream_comes_from_the_model_thread(qtbot, session, traced_llama):
    loaded, trace = traced_llama
    panel = answered(qtbot, ResidualPanel, session, traced_llama)
    assert panel.stream.position == trace.n_tokens - 1
    assert panel.table.columnCount() == loaded.info.n_layers


@pytest.mark.parametrize("layout", sorted(SIZES))
def test_clicking_a_cell_derives_it(qtbot, session, traced_llama, layout):
    loaded, trace = traced_llama
    panel = shown(qtbot, DerivationPanel(session), SIZES[layout])
    panel.executor = thread_executor(loaded)
    session.set_trace(trace)
    session.select(layer=1, head=3)
    panel.map.on_click(6, 2)
    qtbot.waitUntil(lambda: panel.derived.head_write is not None, timeout=20000)     # W^O_h from the model
    assert session.selection.token == 6 and panel.cell == (6, 2)
    recorded = float(trace.attention_head(1, 3)[6, 2])
    assert panel.derived.weight == pytest.approx(recorded, abs=1e-6) and panel.derived.max_delta <= 1e-5
    text = panel.text.toPlainText()
    assert "A[6, 2]" in text and f"{recorded:.6g}" in text and "before RoPE" in text
    assert "what the head adds" in text and panel.derived.head_write.shape == (loaded.config.d_model,)
    assert panel.map.highlighted == (6, 2)
    session.select(head=0)                                   # the clicked cell stays while its row does
    assert panel.cell == (6, 2) and panel.derived.head == 0
    legible(panel)


@pytest.mark.parametrize("layout", sorted(SIZES))
def test_the_atlas_scores_sorts_filters_and_selects(qtbot, session, traced_llama, layout):
    from explorer.core.head_description import describe_heads
    from explorer.core.head_scores import score_heads

    loaded, trace = traced_llama
    panel = answered(qtbot, AtlasPanel, session, traced_llama, layout)
    qtbot.waitUntil(lambda: panel.values is not None, timeout=5000)
    np.testing.assert_allclose(panel.map.image.image, score_heads(loaded).induction, rtol=1e-6)
    listed = [float(panel.table.item(r, 2).text()) for r in range(panel.table.rowCount())]
    assert listed == sorted(listed, reverse=True) and len(listed) == min(40, loaded.info.n_layers * 4)
    panel.floor_box.setValue(float(np.median(listed)))
    assert 0 < panel.table.rowCount() < len(listed)
    panel.metric_box.setCurrentText("entropy")
    np.testing.assert_allclose(panel.map.image.image, describe_heads(trace).entropy, rtol=1e-6)
    panel.floor_box.setValue(0.0)
    layer, head = panel._listed[0]
    panel.table.cellClicked.emit(0, 0)
    assert (session.selection.layer, session.selection.head) == (layer, head)
    legible(panel)


def test_the_block_walk_comes_from_the_model_thread(qtbot, session, traced_llama):
    from explorer.core.block_walk import walk_block

    loaded, trace = traced_llama
    panel = shown(qtbot, DerivationPanel(session), SIZES["wide"])
    panel.executor = thread_executor(loaded)
    session.set_trace(trace)
    session.select(layer=1, token=5)
    with qtbot.waitSignal(panel.block_asker.call.finished, timeout=20000):
        panel.what_box.setCurrentIndex(1)
    expected = walk_block(loaded, trace.token_ids, 1, 5)
    text = panel.text.toPlainText()
    assert "Block 1 at position 5" in text and f"{expected.attn_norm.scale:.5g}" in text
    assert f"{expected.neurons[0].index}" in text and "max |Δ|" in text
    panel.what_box.setCurrentIndex(0)
    assert "A[5, " in panel.text.toPlainText()


def test_a_click_in_the_attention_panel_is_derived(qtbot, session, traced_llama):
    from explorer.app.panels.attention import AttentionPanel

    _, trace = traced_llama
    attention = shown(qtbot, AttentionPanel(session), (900, 600))
    panel = shown(qtbot, DerivationPanel(session), SIZES["wide"])
    session.set_trace(trace)
    session.select(layer=1, head=2)
    attention.large.on_click(7, 3)
    assert session.selection.token == 7
    assert panel.cell == (7, 3) and (panel.derived.layer, panel.derived.head) == (1, 2)
    assert panel.derived.weight == pytest.approx(float(trace.attention_head(1, 2)[7, 3]), abs=1e-6)


def test_a_cell_asked_for_opens_show_the_work_with_that_cell(qtbot, tmp_path):
    """The derivation dock sits behind another bottom tab and is built only when first shown: a click
    on a cell must bring it to the front, and the panel built then must derive the clicked cell."""
    from tests.app.shared_window import make_window

    window = make_window(qtbot, tmp_path)
    dock = window.docks["derivation"]
    window.session.select(token=3, key=1)
    qtbot.waitUntil(lambda: dock.isVisible() and not dock.visibleRegion().isEmpty(), timeout=5000)
    assert isinstance(dock.widget(), DerivationPanel)
    selection = window.session.selection                   # the panel derives the clicked cell of the selection
    assert clicked_column((selection.token, selection.key), 3, 4) == 1
    window.close()
