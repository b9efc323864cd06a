"""The attention panel at a long prompt, whose maps are rebuilt on demand from Q and K: the large head is
drawn as block maxima over its real extent, computed off the GUI thread, exact on hover and zoomed in;
the all-heads grid fills head by head in the background, can be cancelled, and is kept per trace.

Every expectation is computed here from the trace's own Q and K with plain numpy (S = Q Kᵀ · scale,
causal mask, softmax, then maxima over blocks), independently of the views' code."""
from __future__ import annotations

import math
import re

import numpy as np
import pytest
from PySide6.QtCore import QPoint

from explorer.app.thread import threads
from explorer.views import long_maps
from explorer.views.grid import tile_block
from tests.app.long_prompt import N_ATTENTION, SIDE

N = N_ATTENTION


@pytest.fixture(scope="module")
def traces(decoder_2048):
    first = decoder_2048.prefill(np.arange(N) % 96)
    second = decoder_2048.prefill((np.arange(N) * 7 + 3) % 96)
    return first, second


def exact_map(trace, layer: int, head: int) -> np.ndarray:
    """A from the recorded Q and K: softmax(Q Kᵀ · scale) over keys j <= i; NaN where masked."""
    record = trace.steps[0].layers[layer].attn
    q = trace.q(layer, head).astype(np.float64)
    k = trace.k(layer, trace.kv_head_of(head)).astype(np.float64)
    s = q @ k.T * record.scale
    visible = np.tril(np.ones(s.shape, dtype=bool))
    s[~visible] = -np.inf
    a = np.exp(s - s.max(axis=1, keepdims=True))
    a /= a.sum(axis=1, keepdims=True)
    a[~visible] = np.nan
    return a


def block_max(a: np.ndarray, f: int) -> np.ndarray:
    rows, cols = math.ceil(a.shape[0] / f), math.ceil(a.shape[1] / f)
    out = np.full((rows, cols), np.nan)
    for i in range(rows):
        band = a[i * f:(i + 1) * f]
        for j in range(cols):
            block = band[:, j * f:(j + 1) * f]
            if np.isfinite(block).any():
                out[i, j] = np.nanmax(block)
    return out


def map_threads() -> list:
    """The app's threads computing an attention map (a head, its detail or the grid) still alive."""
    return [t for t in threads.live() if t.name.startswith("attention")]


def show(qtbot, panel, trace, layer=1, head=2):
    with qtbot.waitSignal(panel.long_head.shown, timeout=20000):
        panel.session.set_trace(trace)
        panel.session.select(layer=layer, head=head)


def test_the_large_head_is_the_block_maxima_of_the_exact_map_over_its_real_extent(qtbot, long_panel, traces):
    trace = traces[0]
    assert trace.steps[0].layers[1].attn.on_demand
    show(qtbot, long_panel, trace)
    drawn = long_panel.large.image.image
    expected = block_max(exact_map(trace, 1, 2), N // SIDE)
    assert drawn.shape == (SIDE, SIDE)
    np.testing.assert_array_equal(np.isnan(drawn), np.isnan(expected))
    np.testing.assert_allclose(drawn[np.isfinite(drawn)], expected[np.isfinite(expected)], rtol=1e-4, atol=1e-6)
    rect = long_panel.large.image.mapRectToParent(long_panel.large.image.boundingRect())
    assert (rect.width(), rect.height()) == (N, N)                 # the axes count real tokens
    assert "block maxima" in long_panel.large.plot.titleLabel.text and f"{N}×{N}" in long_panel.formula.replace(" ", "")


def test_the_mean_of_heads_and_the_scores_are_drawn_as_block_maxima_too(qtbot, long_panel, traces):
    trace = traces[0]
    show(qtbot, long_panel, trace)
    with qtbot.waitSignal(long_panel.long_head.shown, timeout=20000):
        long_panel.mean_box.setChecked(True)
    mean = np.mean([exact_map(trace, 1, h) for h in range(trace.model.n_heads)], axis=0)
    drawn, expected = long_panel.large.image.image, block_max(mean, N // SIDE)
    np.testing.assert_allclose(drawn[np.isfinite(drawn)], expected[np.isfinite(expected)], rtol=1e-4, atol=1e-6)
    with qtbot.waitSignal(long_panel.long_head.shown, timeout=20000):
        long_panel.mean_box.setChecked(False)                                  # head 2 again: kept, drawn at once
    with qtbot.waitSignal(long_panel.long_head.shown, timeout=20000):
        long_panel.values_box.setCurrentIndex(1)
    record = trace.steps[0].layers[1].attn
    s = trace.q(1, 2).astype(np.float64) @ trace.k(1, trace.kv_head_of(2)).astype(np.float64).T * record.scale
    s[~np.tril(np.ones(s.shape, dtype=bool))] = np.nan
    drawn, expected = long_panel.large.image.image, block_max(s, N // SIDE)
    np.testing.assert_array_equal(np.isnan(drawn), np.isnan(expected))
    np.testing.assert_allclose(drawn[np.isfinite(drawn)], expected[np.isfinite(expected)], rtol=1e-4, atol=1e-4)
    assert "S = Q_h K_hᵀ" in long_panel.formula


def test_hover_reads_the_exact_value_of_the_cell_under_the_pointer(qtbot, long_panel, traces):
    trace = traces[0]
    show(qtbot, long_panel, trace)
    row, col = 1500, 37
    qtbot.wait(300)                                                       # the layout settles (the colour bar came)
    point = long_panel.large_view.mapFromScene(long_panel.large.scene_pos_of(row, col))
    qtbot.mouseMove(long_panel.large_view.viewport(), QPoint(point.x(), point.y()))
    qtbot.waitUntil(lambda: long_panel.readout.text().startswith("A["))
    got = re.match(r"A\[(\d+), (\d+)\] = (\S+)", long_panel.readout.text())
    r, c = int(got.group(1)), int(got.group(2))
    # under the pointer (a pixel is a few cells), in real tokens
    assert abs(r - row) <= N // 100 and abs(c - col) <= N // 100
    assert float(got.group(3)) == pytest.approx(exact_map(trace, 1, 2)[r, c], rel=1e-4)


def test_zooming_in_draws_the_visible_cells_exactly(qtbot, long_panel, traces):
    trace = traces[0]
    show(qtbot, long_panel, trace)
    with qtbot.waitSignal(long_panel.long_head.detailed, timeout=10000) as blocker:
        long_panel.large.plot.setRange(xRange=(100, 300), yRange=(1200, 1400), padding=0)
    r0, r1, c0, c1 = blocker.args[0]
    assert r0 <= 1201 and r1 >= 1400 and c0 <= 101 and c1 >= 300
    detail = long_panel.large.detail.image
    expected = exact_map(trace, 1, 2)[r0:r1, c0:c1]
    np.testing.assert_allclose(detail, expected, rtol=1e-4, atol=1e-7)
    rect = long_panel.large.detail.mapRectToParent(long_panel.large.detail.boundingRect())
    assert (rect.left(), rect.top(), rect.width()) == (c0 - 0.5, r0 - 0.5, c1 - c0)
    # The blocks under it are covered: a masked cell there shows the background, not its block's colour.
    assert long_panel.large.backdrop.isVisible() and long_panel.large.backdrop.rect() == rect


def test_zooming_part_way_draws_the_view_at_finer_blocks(qtbot, long_panel, traces, monkeypatch):
    from explorer.app.widgets import long_head

    monkeypatch.setattr(long_head, "DETAIL_SIDE", 256)                # a 600-cell view: 3 × 3 blocks, finer than 4
    trace = traces[0]
    show(qtbot, long_panel, trace)
    with qtbot.waitSignal(long_panel.long_head.detailed, timeout=10000) as blocker:
        long_panel.large.plot.setRange(xRange=(1000, 1600), yRange=(1100, 1700), padding=0)
    r0, r1, c0, c1 = blocker.args[0]
    block = math.ceil(max(r1 - r0, c1 - c0) / 256)
    assert block == 3
    window = np.full((r1 - r0 // block * block, c1 - c0 // block * block), np.nan)      # from the first block's edge
    window[r0 % block:, c0 % block:] = exact_map(trace, 1, 2)[r0:r1, c0:c1]              # only the view's cells count
    expected = block_max(window, block)
    detail = long_panel.large.detail.image
    np.testing.assert_array_equal(np.isnan(detail), np.isnan(expected))
    np.testing.assert_allclose(detail[np.isfinite(detail)], expected[np.isfinite(expected)], rtol=1e-4, atol=1e-7)
    rect = long_panel.large.detail.mapRectToParent(long_panel.large.detail.boundingRect())
    assert (rect.left(), rect.top(), rect.width()) == (c0 // 3 * 3 - 0.5, r0 // 3 * 3 - 0.5, detail.shape[1] * 3)
    assert "3×3 block maxima in view" in long_panel.large.plot.titleLabel.text


def grid_tile(trace, layer, head):
    block = tile_block(N, N)
    return block_max(exact_map(trace, layer, head), block)


def test_the_grid_fills_head_by_head_and_each_tile_is_the_block_maxima(qtbot, long_panel, traces):
    trace = traces[0]
    seen, progress = [], []
    long_panel.filler.tile_ready.connect(lambda layer, head: seen.append((layer, head)))
    long_panel.filler.progressed.connect(lambda done, total: progress.append((done, total)))
    with qtbot.waitSignal(long_panel.filler.finished, timeout=60000) as finished:
        long_panel.session.set_trace(trace)
        assert long_panel.grid_progress.isVisible() and long_panel.filler.running        # the GUI thread went on
    assert finished.args == [True] and not long_panel.grid_progress.isVisible()
    heads = trace.model.n_layers * trace.model.n_heads
    assert sorted(seen) == [(l, h) for l in range(trace.model.n_layers) for h in range(trace.model.n_heads)]
    assert [done for done, _ in progress] == list(range(1, heads + 1)) and progress[-1][1] == heads
    mosaic = long_panel.mosaic
    for layer, head in [(0, 0), (1, 3)]:
        top, left = mosaic.tile_origin(layer, head)
        r, c = mosaic.tile_shape
        drawn, expected = mosaic.image[top:top + r, left:left + c], grid_tile(trace, layer, head)
        np.testing.assert_array_equal(np.isnan(drawn), np.isnan(expected))
        np.testing.assert_allclose(drawn[np.isfinite(drawn)], expected[np.isfinite(expected)], rtol=1e-4, atol=1e-6)
    np.testing.assert_array_equal(long_panel.grid.image.image, mosaic.image)   # what is drawn is the filled grid


def test_cancel_stops_the_grid_and_keeps_what_it_had(qtbot, long_panel, traces, decoder_2048):
    trace = decoder_2048.prefill((np.arange(N) * 5 + 1) % 96)                  # a trace no other test filled
    seen = []
    long_panel.filler.tile_ready.connect(lambda layer, head: seen.append((layer, head)))
    with qtbot.waitSignal(long_panel.filler.tile_ready, timeout=30000):
        long_panel.session.set_trace(trace)
    with qtbot.waitSignal(long_panel.filler.finished, timeout=5000) as finished:
        long_panel.grid_progress.cancel_button.click()
    assert finished.args == [False] and not long_panel.filler.running
    placed = len(seen)
    qtbot.wait(1500)                                                      # nothing more arrives
    assert len(seen) == placed < trace.model.n_layers * trace.model.n_heads
    drawn = [(l, h) for l in range(trace.model.n_layers) for h in range(trace.model.n_heads)
             if np.isfinite(long_panel.mosaic.tile(l, h)).any()]
    assert sorted(drawn) == sorted(seen)                                  # the tiles computed, and only those


def test_a_second_look_reuses_the_kept_tiles_and_a_new_trace_shows_none_of_the_old(qtbot, long_panel, traces):
    first, second = traces
    with qtbot.waitSignal(long_panel.filler.finished, timeout=60000):
        long_panel.session.set_trace(first)
    qtbot.waitUntil(lambda: not map_threads(), timeout=30000)   # a cancelled head's thread ends its block
    filled = long_panel.mosaic.image.copy()
    before = long_maps.COUNTS["row_blocks"]
    long_panel.scale_box.setCurrentIndex(1)                                    # log colours and back: drawn again
    long_panel.scale_box.setCurrentIndex(0)
    long_panel.hide()                                                          # away and back
    long_panel.show()
    long_panel.refresh()
    assert not long_panel.filler.running and not map_threads()
    assert long_maps.COUNTS["row_blocks"] == before                      # nothing computed again
    np.testing.assert_array_equal(long_panel.mosaic.image, filled)
    long_panel.session.set_trace(second)
    assert np.isnan(long_panel.mosaic.image).all() and np.isnan(long_panel.grid.image.image).all()   # no stale tile
    with qtbot.waitSignal(long_panel.filler.finished, timeout=60000):
        pass
    top, left = long_panel.mosaic.tile_origin(1, 3)
    r, c = long_panel.mosaic.tile_shape
    drawn, expected = long_panel.mosaic.image[top:top + r, left:left + c], grid_tile(second, 1, 3)
    np.testing.assert_allclose(drawn[np.isfinite(drawn)], expected[np.isfinite(expected)], rtol=1e-4, atol=1e-6)


def test_a_decoding_step_computes_only_its_new_row_for_the_grid(decoder_2048):
    prompt = decoder_2048.prefill(np.arange(N - 4) % 96)
    tiles = long_maps.ReducedMaps()
    block = tile_block(N - 3, N - 3)
    assert block == tile_block(N - 4, N - 4)
    tiles.get(prompt, 1, [2], block)
    stepped = decoder_2048.step()
    before = long_maps.COUNTS["row_blocks"]
    grown = tiles.get(stepped, 1, [2], block)
    assert long_maps.COUNTS["row_blocks"] - before == 1                    # one block of rows: the new one
    weights = stepped.attention_head(1, 2).astype(np.float64)
    weights[~stepped.mask(1)] = np.nan
    expected = block_max(weights, block)
    np.testing.assert_array_equal(np.isnan(grown), np.isnan(expected))
    np.testing.assert_allclose(grown[np.isfinite(grown)], expected[np.isfinite(expected)], rtol=1e-5, atol=1e-7)


def test_the_long_title_fits_the_large_map_at_the_width_it_has_on_a_laptop(qtbot, long_panel, traces):
    """At 1366 x 768 the large map's column is ~450 px wide; its title (size, blocks, how to zoom) must fit it,
    not be cut at the right edge (seen in a real window at 8,000 tokens)."""
    long_panel.resize(1000, 520)
    long_panel.show()
    show(qtbot, long_panel, traces[0])
    qtbot.wait(50)
    label = long_panel.large.plot.titleLabel
    drawn = label.item.mapRectToScene(label.item.boundingRect())     # the text as drawn, at the title's size
    assert drawn.width() > 0 and label.text
    # the title asks the layout for its text's width: too long a text widens the plot past its widget,
    # and both the title and the map are cut at the right edge
    assert drawn.right() <= long_panel.large_view.width(), (label.text, drawn.right(), long_panel.large_view.width())
    assert long_panel.large.plot.sceneBoundingRect().right() <= long_panel.large_view.width() + 1
