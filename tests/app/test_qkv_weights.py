"""The Q/K/V panel's projection weights on request: fetched where the model is, drawn per head, following the
selection."""
from __future__ import annotations

import numpy as np
import pytest

from explorer.app.panels.qkv import QKVPanel
from explorer.app.state.session import Session
from explorer.app.widgets.model_call import thread_executor


@pytest.fixture
def tiny():
    from explorer.core.decode import Decoder
    from explorer.core.runtime import from_tensors
    from tests.core.conftest import make_hf_model

    hf = make_hf_model("llama", seed=5)
    loaded = from_tensors(hf.config.to_dict(), hf.state_dict(), name="tiny-llama")
    return loaded, Decoder(loaded).prefill(np.arange(7) % 50)


@pytest.fixture
def session(qtbot, tiny):
    session = Session()
    session.set_model(tiny[0].info)
    session.set_trace(tiny[1])
    return session


def shown(panel) -> dict[str, np.ndarray]:
    return {name: heatmap.image.image for name, heatmap in panel.weight_maps.items()}


def test_weights_appear_on_request_and_follow_the_head(qtbot, session, tiny):
    from explorer.core.weights_view import head_weights

    loaded, _ = tiny
    panel = QKVPanel(session, executor=thread_executor(loaded))
    qtbot.addWidget(panel)
    panel.resize(1000, 700)
    panel.show()
    assert not panel.weights_view.isVisible() and panel.weights is None
    with qtbot.waitSignal(panel.weights_call.finished, timeout=20000):
        panel.weights_box.setChecked(True)
    assert panel.weights_view.isVisible()
    group = loaded.info.n_heads // loaded.info.n_kv_heads
    assert list(panel.weight_maps) == ["W_0^Q", "W_0^K", "W_0^V"]
    for name, image in shown(panel).items():
        np.testing.assert_array_equal(image, head_weights(loaded, 0, 0).matrices[name])
    last = loaded.info.n_heads - 1
    with qtbot.waitSignal(panel.weights_call.finished, timeout=20000):
        session.select(layer=1, head=last)
    kv = last // group
    assert list(panel.weight_maps) == [f"W_{last}^Q", f"W_{kv}^K", f"W_{kv}^V"]
    np.testing.assert_array_equal(shown(panel)[f"W_{kv}^K"], head_weights(loaded, 1, last).matrices[f"W_{kv}^K"])
    assert "query heads" in panel.readout.text()


def test_without_an_executor_the_job_goes_to_the_worker_through_the_session(qtbot, session, tiny):
    loaded, _ = tiny
    asked = []

    def worker(work):                       # what the controller wires to ModelWorker.run_job
        asked.append(work)
        work(loaded, lambda: False)
    session.requests.model_job_requested.connect(worker)
    panel = QKVPanel(session)
    qtbot.addWidget(panel)
    panel.show()
    session.select(head=2)
    assert asked == []                      # nothing is read until the person asks
    with qtbot.waitSignal(panel.weights_call.finished, timeout=20000):
        panel.weights_box.setChecked(True)
    assert len(asked) == 1 and "W_2^Q" in panel.weight_maps
    session.select(head=2, token=3)          # same head: no second read
    assert len(asked) == 1


def test_before_rope_shows_q_and_k_rotated_back_from_a_compact_trace(qtbot, session, tiny):
    loaded, trace = tiny
    assert trace.steps[0].layers[1].attn.q_pre_rope is None             # not stored: derived
    panel = QKVPanel(session, executor=thread_executor(loaded))
    qtbot.addWidget(panel)
    panel.show()
    session.select(layer=1, head=2)
    assert panel.pre_rope.isEnabled()
    panel.pre_rope.setChecked(True)
    x = trace.steps[0].layers[1].x.astype(np.float32)                   # X (T, d_model)
    d = loaded.config.d_head
    w_q = loaded.model.layers[1].attn.wq.weight.numpy()[2 * d: 3 * d]  # W_2^Q: head 2's rows of W^Q
    np.testing.assert_allclose(panel.matrices["Q_2"], x @ w_q.T, atol=1e-4)
    panel.pre_rope.setChecked(False)
    np.testing.assert_allclose(panel.matrices["Q_2"], trace.q(1, 2), atol=1e-6)


def test_q_k_v_show_exactly_the_token_rows_and_scroll_together(qtbot, session, tiny):
    _, trace = tiny
    panel = QKVPanel(session)
    qtbot.addWidget(panel)
    panel.resize(1400, 700)
    panel.show()
    qtbot.wait(50)
    rows = trace.n_tokens
    for heatmap in panel.heatmaps.values():              # no empty band above the first token
        np.testing.assert_allclose(heatmap.plot.getViewBox().viewRange()[1], (-0.5, rows - 0.5), atol=1e-6)
    first, *others = panel.heatmaps.values()
    first.plot.getViewBox().setYRange(1.5, 4.5, padding=0)
    for heatmap in others:
        np.testing.assert_allclose(heatmap.plot.getViewBox().viewRange()[1], (1.5, 4.5), atol=1e-6)
