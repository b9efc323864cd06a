"""After a long prompt's map (drawn as block maxima) a short prompt's map is drawn cell by cell, and nothing
of the long one stays: not its title ("2048×2048 in 4×4 block maxima"), not its size in the header."""
from __future__ import annotations

import numpy as np
import pytest

from explorer.app.panels import AttentionPanel
from explorer.app.state.session import Session
from explorer.views import long_maps
from tests.app.shared_window import make

N = 2048                  # rebuilt on demand and drawn as block maxima


@pytest.fixture(scope="module")
def long_and_short():
    from explorer.core.decode import Decoder, RecordOptions
    from explorer.core.runtime import from_tensors
    from tests.core.conftest import make_hf_model

    hf_model = make_hf_model("llama")
    loaded = from_tensors(dict(hf_model.config.to_dict(), max_position_embeddings=N + 16), hf_model.state_dict())
    long = Decoder(loaded, RecordOptions(), capacity=N + 8).prefill(np.arange(N) % 96)
    short = Decoder(loaded, RecordOptions(), capacity=32).prefill(np.arange(9) * 5 % 96)
    return long, short


def test_a_short_map_after_a_long_one_keeps_no_block_maxima_title(qtbot, long_and_short, monkeypatch):
    monkeypatch.setattr(long_maps, "DISPLAY_SIDE", 512)
    long, short = long_and_short
    panel = make(qtbot, Session(), AttentionPanel)
    with qtbot.waitSignal(panel.long_head.shown, timeout=30000):
        panel.session.set_trace(long)
    title = panel.large.plot.titleLabel
    assert "block maxima" in title.text and title.isVisible()
    panel.session.set_trace(short)
    assert panel.large.image.image.shape == (short.n_tokens, short.n_tokens)
    assert not title.isVisible() or "block maxima" not in title.text, title.text
    assert str(N) not in panel.formula
