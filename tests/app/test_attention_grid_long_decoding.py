"""The all-heads grid of a long trace through decoding steps: the previous step's tiles stay drawn,
dimmed and labelled as that step, until every tile of the new step is in; never a blank grid between
steps, never two steps mixed; a new prompt still starts blank.

The final tiles are checked against block maxima of the maps computed with numpy from the trace's
own Q and K over every query so far, the steps' too (test_attention_long_prompt.exact_map: S = Q Kᵀ · scale
over keys j <= i, softmax)."""
from __future__ import annotations

import numpy as np
import pytest

from explorer.app.panels import AttentionPanel
from explorer.app.panels.attention import STALE_OPACITY
from explorer.app.state.session import Session
from explorer.views.grid import tile_block
from tests.app.shared_window import make
from tests.app.test_attention_long_prompt import N, block_max, exact_map

STEPS_CAPACITY = 8


@pytest.fixture(scope="module")
def decoder():
    from explorer.core.decode import Decoder, RecordOptions
    from explorer.core.runtime import from_tensors
    from tests.core.conftest import make_hf_model

    hf_model = make_hf_model("llama")
    loaded = from_tensors(dict(hf_model.config.to_dict(), max_position_embeddings=N + 16), hf_model.state_dict())
    return Decoder(loaded, RecordOptions(), capacity=N + STEPS_CAPACITY)


@pytest.fixture
def panel(qtbot):
    return make(qtbot, Session(), AttentionPanel)


def watch(panel) -> list[dict]:
    """What the grid drew at each repaint and each tile placed (after the panel's own slots)."""
    seen = []

    def look(*_):
        seen.append(dict(image=panel.grid.image.image.copy(), opacity=panel.grid.image.opacity(),
                         label=panel.grid_progress.label.text(), updating=panel.filler.updating))

    panel.filler.repaint.connect(look)
    panel.filler.tile_ready.connect(look)
    return seen


def fill(qtbot, panel, trace) -> None:
    with qtbot.waitSignal(panel.filler.finished, timeout=60000) as finished:
        panel.session.set_trace(trace)
    assert finished.args == [True]


def assert_tiles_are_block_maxima(panel, trace) -> None:
    t = trace.n_tokens
    block = tile_block(t, t)
    for layer in range(trace.model.n_layers):
        for head in range(trace.model.n_heads):
            drawn, expected = panel.mosaic.tile(layer, head), block_max(exact_map(trace, layer, head), block)
            assert drawn.shape == expected.shape
            np.testing.assert_array_equal(np.isnan(drawn), np.isnan(expected))
            np.testing.assert_allclose(drawn[np.isfinite(drawn)], expected[np.isfinite(expected)],
                                       rtol=1e-4, atol=1e-6)
    np.testing.assert_array_equal(panel.grid.image.image, panel.mosaic.image)


def test_a_step_keeps_the_previous_tiles_dimmed_and_labelled_until_the_new_ones_are_in(qtbot, panel, decoder):
    prompt = decoder.prefill(np.arange(N) % 96)
    fill(qtbot, panel, prompt)
    before = panel.grid.image.image.copy()
    stepped = decoder.step()
    seen = watch(panel)
    with qtbot.waitSignal(panel.filler.finished, timeout=60000) as finished:
        panel.session.set_trace(stepped)
        assert panel.filler.running and panel.filler.updating                 # the GUI thread went on
        np.testing.assert_array_equal(panel.grid.image.image, before)         # not blank: the step before
        assert panel.grid.image.opacity() == STALE_OPACITY and panel.grid_progress.isVisible()
        assert panel.grid_progress.label.text().startswith("step 0, updating to step 1: ")
    assert finished.args == [True]
    while_updating = [s for s in seen if s["updating"]]
    assert len(while_updating) >= stepped.model.n_layers * stepped.model.n_heads - 1     # each tile placed
    for look in while_updating:
        assert np.isfinite(look["image"]).any()                               # never an empty grid
        np.testing.assert_array_equal(look["image"], before)                  # nor a mix of two steps
        assert look["opacity"] == STALE_OPACITY and look["label"].startswith("step 0, updating to step 1: ")
    last = seen[-1]
    assert not last["updating"] and last["opacity"] == 1.0 and not panel.grid_progress.isVisible()
    assert_tiles_are_block_maxima(panel, stepped)


def test_steps_arriving_faster_than_the_grid_keep_the_last_full_grid_then_draw_the_newest(qtbot, panel, decoder):
    fill(qtbot, panel, decoder.prefill((np.arange(N) * 3 + 1) % 96))
    before = panel.grid.image.image.copy()
    panel.session.set_trace(decoder.step())
    with qtbot.waitSignal(panel.filler.finished, timeout=60000) as finished:
        panel.session.set_trace(newest := decoder.step())                    # before step 1's grid was full
        np.testing.assert_array_equal(panel.grid.image.image, before)
        assert panel.grid_progress.label.text().startswith("step 0, updating to step 2: ")
    while not finished.args[0]:                                               # step 1's fill, dropped
        with qtbot.waitSignal(panel.filler.finished, timeout=60000) as finished:
            pass
    assert_tiles_are_block_maxima(panel, newest)


def test_a_new_prompt_starts_blank_and_cancel_shows_the_new_steps_tiles_so_far(qtbot, panel, decoder):
    fill(qtbot, panel, decoder.prefill((np.arange(N) * 5 + 2) % 96))
    other = decoder.prefill((np.arange(N) * 7 + 3) % 96)                      # another trace: no old tile
    with qtbot.waitSignal(panel.filler.finished, timeout=60000):
        panel.session.set_trace(other)
        assert np.isnan(panel.grid.image.image).all() and not panel.filler.updating
        assert panel.grid.image.opacity() == 1.0
    stepped = decoder.step()
    with qtbot.waitSignal(panel.filler.tile_ready, timeout=60000):
        panel.session.set_trace(stepped)
    with qtbot.waitSignal(panel.filler.finished, timeout=5000):
        panel.grid_progress.cancel_button.click()
    assert not panel.filler.updating and panel.grid.image.opacity() == 1.0    # no stale grid left unmarked
    np.testing.assert_array_equal(panel.grid.image.image, panel.filler.mosaic.image)
    assert panel.mosaic.tile_shape == panel.filler.mosaic.tile_shape
