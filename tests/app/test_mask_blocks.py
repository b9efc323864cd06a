"""The mask's picture grows by a decoding step's rows (issue 22): the picture of the records before the last is
kept, so a step folds its own row and its predecessor's (ALLOWED now, NEW_ROW before), not the whole trace again;
every picture is still the block maxima of the dense mask, and the panel shows what a panel drawn once shows."""
from __future__ import annotations

import numpy as np
import pytest

from explorer.app.panels import MaskPanel
from explorer.app.state.session import Session
from explorer.views import mask_blocks as blocks_module
from explorer.views.mask_blocks import mask_blocks
from tests.app.long_prompt import long_decoder
from tests.app.shared_window import make
from tests.app.test_panels_long_prompt import dense_block_maxima

PROMPT = 300


@pytest.fixture(scope="module")
def traces():
    """A prefill of PROMPT tokens and the traces of five decoding steps after it (Mistral: a sliding-window layer)."""
    decoder = long_decoder(PROMPT, "mistral")
    decoder.prefill(np.arange(PROMPT) % 96)
    return [decoder.trace] + [decoder.step() for _ in range(5)]


@pytest.fixture
def folded_rows(monkeypatch):
    """The mask rows each fold marks, listed as they are folded."""
    rows = []
    runs, dense = blocks_module._fold_runs, blocks_module._fold_dense
    monkeypatch.setattr(blocks_module, "_fold_runs", lambda out, first, *a: rows.append(len(first)) or runs(
        out, first, *a))
    monkeypatch.setattr(blocks_module, "_fold_dense", lambda out, mask, *a: rows.append(len(mask)) or dense(
        out, mask, *a))
    return rows


@pytest.mark.parametrize("side", [1024, 64, 7])
def test_a_step_folds_its_own_rows_and_the_picture_is_the_dense_masks_block_maxima(traces, folded_rows, side):
    grown = 0
    for layer in range(2):
        factor = mask_blocks(traces[0], layer, side=side).factor
        for trace in traces[1:]:
            folded_rows.clear()
            picture = mask_blocks(trace, layer, side=side)
            np.testing.assert_array_equal(picture.blocks, dense_block_maxima(trace, layer, None, side))
            # The prefill's rows are folded at the first step, and again where the blocks' side changed.
            if trace is not traces[1] and picture.factor == factor:
                assert sum(folded_rows) == 2, f"layer {layer}, step {trace.n_steps - 1}: {folded_rows}"
                grown += 1
            factor = picture.factor
        for step in (3, 0, None):                            # replayed back, then the last step again
            picture = mask_blocks(traces[-1], layer, step, side=side)
            np.testing.assert_array_equal(picture.blocks, dense_block_maxima(traces[-1], layer, step, side))
    assert grown >= 4


def test_the_panel_stepped_shows_what_a_panel_drawn_once_shows(qtbot, traces):
    session = Session()
    session.set_token_display(lambda token_id: f"t{token_id}")
    stepped = make(qtbot, session, MaskPanel)
    for trace in traces:
        session.set_trace(trace)
    blocks_module._FOLDED.clear()
    fresh = make(qtbot, session, MaskPanel)
    np.testing.assert_array_equal(stepped.mask, fresh.mask)
    assert (stepped.factor, stepped.extent, stepped.formula) == (fresh.factor, fresh.extent, fresh.formula)
    for side in ("left", "top"):
        assert stepped.heatmap.axes[side]._labels == fresh.heatmap.axes[side]._labels
        assert stepped.heatmap.axes[side].labelText == fresh.heatmap.axes[side].labelText
