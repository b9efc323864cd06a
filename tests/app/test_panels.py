"""Panels, wrapped around a real Session fed synthetic traces: change the model, assert on the view."""
from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import QPoint, Qt

from explorer.app.panels import (
    AttentionPanel,
    EmbeddingsPanel,
    KVCachePanel,
    MaskPanel,
    NextTokenPanel,
    QKVPanel,
    TokensPanel,
    registry,
)
from explorer.app.panels.mask import ALLOWED, MASKED, NEW_ROW
from tests.app.shared_window import make
from tests.app.synthetic_trace import WORDS, build_trace


def view_point(view, heatmap, row, col) -> QPoint:
    """Where a matrix cell's centre lies in a GraphicsLayoutWidget's viewport."""
    return view.mapFromScene(heatmap.scene_pos_of(row, col))


def test_all_panels_have_a_title_a_formula_and_export_actions(qtbot, words_session):
    panels = [make(qtbot, words_session, spec.cls) for spec in registry.PANELS]
    words_session.set_trace(build_trace(n_layers=3, n_heads=4, n_kv_heads=2, prompt_len=7, steps=2))
    assert [spec.object_name for spec in registry.PANELS] == [
        "tokens", "embeddings", "qkv", "attention", "mask", "kv_cache", "kv_lab", "next_token", "model_map",
        "derivation", "attribution", "residual", "atlas", "experiments"]
    for panel in panels:
        assert isinstance(panel.title, str) and panel.title
        assert panel.formula, f"{panel.object_name} shows no formula"
        assert panel.export_actions(), f"{panel.object_name} has no export action"
        assert not panel.grab().toImage().isNull()
    qkv = panels[2]
    assert "Q_0 = X W_0^Q ∈ ℝ^{9×8}" in qkv.formula
    assert "<sub>0</sub><sup>Q</sup>" in qkv.header.text()


def test_selecting_a_token_in_the_token_panel_highlights_it_in_attention_and_mask(qtbot, words_session):
    tokens, attention, mask = (make(qtbot, words_session, cls) for cls in (TokensPanel, AttentionPanel, MaskPanel))
    words_session.set_trace(build_trace(prompt_len=8, steps=2))
    assert attention.large.highlighted == (None, None)
    tokens.table.selectRow(3)
    assert words_session.selection.token == 3
    for heatmap in (attention.large, mask.heatmap):
        assert heatmap.highlighted == (3, 3)
        assert heatmap.row_box.isVisible() and heatmap.col_box.isVisible()
        assert heatmap.row_box.rect().center().y() == pytest.approx(3.0)
        assert heatmap.col_box.rect().center().x() == pytest.approx(3.0)
    assert tokens.highlighted_token == 3
    assert tokens.table.selectionModel().isRowSelected(3)
    # And back the other way: a click in the attention map selects the query token everywhere.
    attention.large.on_click(6, 1)
    assert words_session.selection.token == 6
    assert mask.heatmap.highlighted == (6, 6)
    assert tokens.table.selectionModel().isRowSelected(6)


def test_three_steps_add_three_mask_rows_and_three_tokens_of_kv_bytes(qtbot, words_session):
    mask, kv = make(qtbot, words_session, MaskPanel), make(qtbot, words_session, KVCachePanel)
    n_layers, n_kv, d_head = 3, 2, 8
    options = dict(n_layers=n_layers, n_heads=4, n_kv_heads=n_kv, d_head=d_head, prompt_len=6)
    words_session.set_trace(build_trace(steps=0, **options))
    assert mask.mask.shape == (6, 6)
    assert not (mask.mask == NEW_ROW).any()          # prefill: the square causal mask, nothing new
    before = kv.total_in_use
    words_session.set_trace(build_trace(steps=3, **options))
    assert mask.mask.shape == (9, 9)
    assert (mask.mask[-1] == NEW_ROW).sum() == 9 and not (mask.mask[:-1] == NEW_ROW).any()
    token_bytes = n_layers * 2 * n_kv * d_head * 4     # GQA: 2 · N_KV · d_head · float32, every layer
    assert kv.total_in_use - before == 3 * token_bytes
    # The slider replays: step 0 is the prefill again.
    mask.slider.setValue(0)
    assert words_session.selection.step == 0
    assert mask.mask.shape == (6, 6)
    assert kv.total_in_use == before


def test_masks_are_drawn_per_layer_as_they_are(qtbot, words_session):
    mask = make(qtbot, words_session, MaskPanel)
    words_session.set_trace(build_trace(n_layers=2, prompt_len=6, steps=3, sliding_window=3))
    assert "sliding" in mask.formula and "W = 3" in mask.formula
    last = mask.mask[-1]
    assert list(np.flatnonzero(last != MASKED)) == [6, 7, 8]    # the window: the last 3 keys
    words_session.select(layer=1)
    assert "causal" in mask.formula
    assert (mask.mask[-1] != MASKED).sum() == 9
    words_session.set_trace(build_trace(n_layers=2, prompt_len=5, encoder_only=True))
    assert "bidirectional" in mask.formula
    assert (mask.mask == ALLOWED).all()


def test_hover_reports_exact_value_and_both_tokens(qtbot, words_session):
    attention = make(qtbot, words_session, AttentionPanel)
    trace = build_trace(prompt_len=6, steps=1)
    words_session.set_trace(trace)
    qtbot.waitExposed(attention)
    expected = trace.attention(0)[0][5, 2]
    qtbot.mouseMove(attention.large_view.viewport(), view_point(attention.large_view, attention.large, 5, 2))
    qtbot.waitUntil(lambda: attention.readout.text().startswith("A[5, 2]"))
    text = attention.readout.text()
    assert f"{expected:.6g}" in text
    assert f"‘{trace.token_text[5]}’" in text and f"‘{trace.token_text[2]}’" in text      # quoted, not Python's repr


def test_clicking_a_grid_tile_opens_that_layer_and_head(qtbot, words_session):
    attention, qkv = make(qtbot, words_session, AttentionPanel), make(qtbot, words_session, QKVPanel)
    trace = build_trace(n_layers=3, n_heads=4, prompt_len=6, steps=1)
    words_session.set_trace(trace)
    qtbot.waitExposed(attention)
    top, left = attention.mosaic.tile_origin(2, 1)
    point = view_point(attention.grid_view, attention.grid, top + 2, left + 2)
    qtbot.mouseClick(attention.grid_view.viewport(), Qt.MouseButton.LeftButton, pos=point)
    qtbot.waitUntil(lambda: (words_session.selection.layer, words_session.selection.head) == (2, 1))
    assert np.allclose(np.nan_to_num(attention.matrix), trace.attention(2)[1])
    assert np.allclose(qkv.matrices["Q_1"], trace.q(2, 1))
    assert attention.grid.tile_box.isVisible()


def test_scores_toggle_and_log_scale(qtbot, words_session):
    attention = make(qtbot, words_session, AttentionPanel)
    trace = build_trace(prompt_len=5, steps=2)
    words_session.set_trace(trace)
    words_session.select(layer=1, head=2)
    attention.values_box.setCurrentIndex(1)
    scores = trace.scores(1, 2)
    shown = attention.matrix
    assert np.array_equal(np.isnan(shown), ~np.isfinite(scores))
    assert np.allclose(shown[np.isfinite(scores)], scores[np.isfinite(scores)])
    assert "S = Q_h K_hᵀ" in attention.formula
    attention.values_box.setCurrentIndex(0)
    attention.scale_box.setCurrentIndex(1)
    low, high = attention.large.image.levels
    assert high == 0.0 and low <= -3                 # log10 of 1 at the top, at least three decades below it
    drawn, weights = attention.large.image.image, trace.attention_head(1, 2).astype(np.float64)   # (T, T)
    mask = trace.mask(1)
    visible = mask & (weights >= 10 ** low)
    assert visible.sum() > mask.sum() // 2
    np.testing.assert_allclose(drawn[visible], np.log10(weights[visible]), atol=1e-5)
    assert np.isnan(drawn[~mask]).all() and (drawn[mask & ~visible] == np.float32(low)).all()


def test_grid_stays_small_at_2048_tokens(qtbot, words_session):
    attention = make(qtbot, words_session, AttentionPanel)
    words_session.set_trace(build_trace(n_layers=2, n_heads=2, d_head=4, prompt_len=2048, steps=0, max_positions=4096))
    assert attention.matrix.shape == (2048, 2048)
    assert attention.mosaic.tile_shape == (32, 32)
    # the large map is drawn reduced, by maxima, to the few hundred pixels it has, not as 2048 x 2048 cells
    qtbot.waitUntil(lambda: min(attention.large.image.factors) > 1, timeout=5000)


def test_qkv_shows_the_shared_kv_head_and_mla_latent(qtbot, words_session):
    qkv, kv = make(qtbot, words_session, QKVPanel), make(qtbot, words_session, KVCachePanel)
    trace = build_trace(n_heads=6, n_kv_heads=2, prompt_len=5)
    words_session.set_trace(trace)
    words_session.select(head=4)
    assert "shared by query heads 3, 4, 5" in qkv.sharing.text()
    assert np.allclose(qkv.matrices["K_1"], trace.k(0, 1))
    assert "KV1 ← Q3 <b>Q4</b> Q5" in kv.grouping.text()
    words_session.set_trace(build_trace(n_heads=4, prompt_len=5, mla_rank=16, mla_rope_dim=4))
    assert qkv.matrices["c_KV"].shape == (5, 16) and qkv.matrices["k_R"].shape == (5, 4)
    assert "latent" in kv.grouping.text()
    native = [kv.table.item(r, 0).text() for r in range(kv.table.rowCount())
              if "this model" in kv.table.item(r, 0).text()]
    assert native == ["mla-16  ◀ this model"]


def test_next_token_click_forces_only_at_the_last_position(qtbot, words_session):
    panel = make(qtbot, words_session, NextTokenPanel)
    trace = build_trace(prompt_len=5, steps=2)
    words_session.set_trace(trace)
    last = trace.steps[-1]
    assert list(panel.candidates) == list(last.top_ids[-1])
    assert panel.table.item(0, 1).text() == WORDS[last.top_ids[-1][0]]
    with qtbot.waitSignal(words_session.requests.force_requested) as forced:
        panel.table.cellClicked.emit(2, 1)
    assert forced.args == [int(last.top_ids[-1][2])]
    words_session.select(token=1)
    with qtbot.assertNotEmitted(words_session.requests.force_requested):
        panel.table.cellClicked.emit(0, 1)
    chosen = int(trace.token_ids[2])
    ranks = list(trace.steps[0].top_ids[1])
    assert panel.chosen_rank == (ranks.index(chosen) + 1 if chosen in ranks else None)


def test_logit_lens_hook_shows_what_the_session_hands_over(qtbot, words_session):
    panel = make(qtbot, words_session, NextTokenPanel)
    words_session.set_trace(build_trace(n_layers=2, prompt_len=4))
    with qtbot.waitSignal(words_session.requests.logit_lens_requested) as asked:
        panel.lens_button.click()
    assert asked.args == [3]
    words_session.requests.logit_lens_ready.emit({"position": 3, "ids": np.array([[1, 2], [3, 4], [5, 6]]),
                                   "probs": np.array([[0.5, 0.2], [0.6, 0.1], [0.9, 0.05]])})
    assert panel.lens_table.isVisibleTo(panel) and panel.lens_table.rowCount() == 3
    assert WORDS[5] in panel.lens_table.item(2, 1).text()
    lens = (np.array([[7, 8]]), np.array([[0.7, 0.2]]))                  # Decoder.logit_lens's pair
    words_session.requests.logit_lens_ready.emit(lens)
    assert panel.lens_table.rowCount() == 1 and WORDS[7] in panel.lens_table.item(0, 1).text()


def test_tokens_panel_shows_live_tokens_before_any_run(qtbot, words_session):
    from types import SimpleNamespace

    panel = make(qtbot, words_session, TokensPanel)
    live = SimpleNamespace(ids=np.array([5, 9, 2]), text=("The", "·cat", "!"), spans=((0, 3), (3, 7), (7, 8)),
                           special=np.zeros(3, bool), raw=(b"The", b" cat", b"!"), source="The cat!")
    words_session.set_tokens(live)
    assert [panel.table.item(r, 2).text() for r in range(3)] == ["5", "9", "2"]
    assert panel.table.item(1, 3).text() == "3–7"
    assert "20 63 61 74" in panel.table.item(1, 1).toolTip()


def test_embeddings_show_rows_of_e_and_rope_angles(qtbot, words_session):
    panel = make(qtbot, words_session, EmbeddingsPanel)
    trace = build_trace(prompt_len=5, steps=1, d_model=16)
    words_session.set_trace(trace)
    assert np.allclose(panel.matrix, np.concatenate([s.embeddings for s in trace.steps]))
    panel.view_box.setCurrentIndex(panel.view_box.findData("rope"))
    assert panel.matrix.shape == (6, len(trace.rope_inv_freq))
    assert panel.matrix[3, 0] == pytest.approx(3.0 % (2 * np.pi))


def test_grid_tiles_are_block_maxima_of_the_dense_attention():
    from explorer.views.grid import downsampled_attention

    trace = build_trace(n_layers=1, n_heads=2, prompt_len=9, steps=4, sliding_window=3)
    for step in (0, None):
        tiles = downsampled_attention(trace, 0, tile=4, upto_step=step)          # 13 tokens -> blocks of 4
        dense, mask = trace.attention(0, step), trace.mask(0, step)
        n = dense.shape[1]
        blocks = -(-n // 4)
        padded = np.zeros((2, blocks * 4, blocks * 4), np.float32)
        padded[:, :n, :n] = dense
        allowed = np.zeros((blocks * 4, blocks * 4), bool)
        allowed[:n, :n] = mask
        expected = padded.reshape(2, blocks, 4, blocks, 4).max(axis=(2, 4))
        expected[:, ~allowed.reshape(blocks, 4, blocks, 4).any(axis=(1, 3))] = np.nan
        assert np.array_equal(tiles, expected, equal_nan=True)


def test_the_kv_total_is_drawn_from_zero_so_a_prefill_alone_has_readable_ticks(qtbot, words_session):
    """A prefill is one point: drawn by its own range, its axis had zero height and every tick read the same
    number (seen at 7,836 tokens). From zero, the point and the steps after it read as bytes against tokens."""
    kv = make(qtbot, words_session, KVCachePanel)
    options = dict(n_layers=3, n_heads=4, n_kv_heads=2, d_head=8, prompt_len=6)
    for steps in (0, 3):
        words_session.set_trace(build_trace(steps=steps, **options))
        (x0, x1), (y0, y1) = kv.total_plot.getViewBox().viewRange()
        in_use_kib = kv.total_in_use / 1024
        assert y0 == 0.0 and in_use_kib < y1 < 1.2 * in_use_kib          # the point, near the top, and zero
        assert x0 == 0.0 and 6 + steps < x1
        ticks = kv.total_plot.getAxis("left").tickValues(y0, y1, 200)
        values = [v for _, level in ticks for v in level]
        assert len(set(values)) >= 2                                       # distinct tick labels


def test_the_next_token_formula_names_the_position_being_computed_not_the_last_one(qtbot, words_session, monkeypatch):
    panel = make(qtbot, words_session, NextTokenPanel)
    words_session.set_trace(build_trace(steps=2, prompt_len=6))
    last = words_session.trace.n_tokens - 1
    assert f"h_{{{last}}}" in panel.formula
    monkeypatch.setattr(type(words_session.trace), "candidates",
                        lambda trace, position: None)           # as a real prefill: only its last row recorded
    words_session.select(token=2)                                  # a prompt position: its candidates are asked for
    assert "computing the candidates" in panel.position_label.text()
    assert "h_{2}" in panel.formula and f"h_{{{last}}}" not in panel.formula
