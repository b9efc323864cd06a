"""While a long prompt decodes, the large map follows each step by computing only the step's new row,
and shows no map of another head while the one asked for is computed."""
from __future__ import annotations

import threading

import numpy as np
import pytest

from explorer.app.panels import AttentionPanel
from explorer.app.state.session import Session
from explorer.views import long_maps
from tests.app.shared_window import make

N = 1100


@pytest.fixture
def decoder():
    from explorer.core.decode import Decoder, RecordOptions
    from explorer.core.runtime import from_tensors
    from tests.core.conftest import make_hf_model

    hf_model = make_hf_model("qwen2")
    loaded = from_tensors(dict(hf_model.config.to_dict(), max_position_embeddings=N + 16), hf_model.state_dict())
    return Decoder(loaded, RecordOptions(), capacity=N + 8)


def test_a_decoding_step_redraws_the_large_map_from_its_new_row(qtbot, decoder, monkeypatch):
    monkeypatch.setattr(long_maps, "DISPLAY_SIDE", 256)             # 5 × 5 blocks at N tokens
    panel = make(qtbot, Session(), AttentionPanel)
    with qtbot.waitSignal(panel.long_head.shown, timeout=20000):
        panel.session.set_trace(decoder.prefill(np.arange(N) % 96))
        panel.session.select(layer=1, head=3)
    panel.filler.cancel()
    stepped = decoder.step()
    asked = []                                                        # the windows the large map computed
    original = long_maps.block_maxima

    def spy(*args, **kwargs):
        if threading.current_thread().name == "attention-head":
            asked.append(args[7] if len(args) > 7 else kwargs.get("window"))
        return original(*args, **kwargs)

    monkeypatch.setattr(long_maps, "block_maxima", spy)
    with qtbot.waitSignal(panel.long_head.shown, timeout=20000):
        panel.session.set_trace(stepped)
    panel.filler.cancel()
    assert asked == [(N, N + 1, 0, N + 1)]                            # only the step's new row
    weights = np.where(stepped.mask(1), stepped.attention_head(1, 3), np.nan)
    f = 5
    expected = np.array([[np.nanmax(b) if np.isfinite(b).any() else np.nan
                          for b in np.array_split(row, range(f, weights.shape[1], f), axis=1)]
                         for row in np.array_split(weights, range(f, weights.shape[0], f), axis=0)])
    drawn = panel.large.image.image
    np.testing.assert_array_equal(np.isnan(drawn), np.isnan(expected))
    np.testing.assert_allclose(drawn[np.isfinite(drawn)], expected[np.isfinite(expected)], rtol=1e-5, atol=1e-7)
    panel.session.select(head=0)                                      # another head: the old one is not shown
    assert panel.large.image.image is None and "computing layer 1, head 0" in panel.large.plot.titleLabel.text
