"""Show the work with an ablation on (the Experiments list): the panel says in plain words that the head's output
was replaced, shows the output the model used, and does not count A.V against it; a head left alone keeps the
check. The model is a tiny random llama run through the real core under the same intervention."""
from __future__ import annotations

import numpy as np
import pytest

from explorer.core.intervention import HeadAblation, Intervention
from tests.app.derivation_panel import derivation_panel

ABLATED = (1, 2)
ZERO = Intervention(ablations=(HeadAblation(*ABLATED),))
SENTENCE = "This head's output was replaced by the experiment: zero ablation"


@pytest.fixture(scope="module")
def tiny():
    from explorer.core.decode import Decoder
    from explorer.core.runtime import from_tensors
    from tests.core.conftest import make_hf_model

    hf = make_hf_model("llama", seed=5)
    loaded = from_tensors(hf.config.to_dict(), hf.state_dict(), name="tiny-llama")
    decoder = Decoder(loaded, intervention=ZERO)
    decoder.prefill(np.arange(9) * 7 % 90)
    decoder.step()
    return loaded, decoder.trace


@pytest.fixture
def panel(qtbot, tiny):
    loaded, trace = tiny
    return derivation_panel(qtbot, loaded, trace, ZERO)


def test_an_ablated_head_is_said_to_be_replaced_and_not_flagged(qtbot, panel, tiny):
    loaded, trace = tiny
    panel.session.select(layer=ABLATED[0], head=ABLATED[1], token=6)
    qtbot.waitUntil(lambda: panel.derived.head_write is not None, timeout=20000)     # W^O_h from the model
    text = panel.text.toPlainText()
    assert SENTENCE in text and "A·V below is what it would have been" in text
    weights = trace.attention_head(*ABLATED)[6].astype(np.float64)
    would_be = weights[: trace.n_tokens] @ trace.v(ABLATED[0], trace.kv_head_of(ABLATED[1])).astype(np.float64)
    assert f"{np.abs(would_be).max():.3g}" in text                   # the gap to the zeros the model used
    assert "y = sum_j A_ij v_j" not in text and panel.derived.max_delta <= 1e-5
    np.testing.assert_array_equal(panel.derived.head_write, 0.0)    # a zeroed head adds nothing
    assert "replaced by the experiment" in panel.formula


def test_a_head_left_alone_keeps_the_check(qtbot, panel, tiny):
    panel.session.select(layer=ABLATED[0], head=0, token=6)
    text = panel.text.toPlainText()
    assert "replaced" not in text and "y = sum_j A_ij v_j" in text
    assert panel.derived.deltas["y = sum_j A_ij v_j"] <= 1e-5
