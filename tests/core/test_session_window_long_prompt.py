"""The window opens a long session file (>= 1,024 prompt tokens, maps on demand) to the same trace, and saves it
back unchanged: File > Open session on the real core, offscreen. The expectation is the API's original run."""
from __future__ import annotations

import numpy as np
import pytest

from tests.app.window_helpers import session_opened
from tests.core.conftest import FORCED

pytestmark = pytest.mark.usefixtures("own_home")


def test_the_window_opens_a_long_session_to_the_same_trace(qtbot, tmp_path, original):
    path = original.save_session(tmp_path / "long.json")
    with session_opened(qtbot, tmp_path, path, original.trace.n_steps) as (window, trace):
        assert trace.steps[0].layers[0].attn.on_demand
        np.testing.assert_array_equal(trace.token_ids, original.ids)
        assert [s.chosen_id for s in trace.steps] == [s.chosen_id for s in original.trace.steps]
        for layer in range(trace.model.n_layers):
            for head in range(trace.model.n_heads):
                np.testing.assert_array_equal(trace.attention_head(layer, head), original.attention(layer, head))
        assert window.prompt.text == original.prompt
        state = window.session_state()
        assert state.prompt_ids == tuple(int(i) for i in original.ids[: original.trace.steps[0].n_new])
        assert state.forced == ((2, FORCED),) and state.steps == original.trace.n_steps
