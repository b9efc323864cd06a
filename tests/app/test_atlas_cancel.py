"""Head atlas and Cancel (or Stop): what the atlas computes stops where it runs, and stays stopped.

The text's description of a prompt whose maps are stored (a few hundred tokens: not rebuilt on demand) stops
at the next head after Cancel (before, only rebuilt maps checked the flag, and the thread read every layer
after the Cancel, so "cancelled at k of L" turned into the full result). The heads' scores on repeated random
tokens, a job of the model thread, are cancelled there by Cancel or Stop: the atlas then says it stopped,
with Resume, and asks nothing again until Resume or another run (before, a Stop dropped the question and the
shown atlas asked it again at once)."""
from __future__ import annotations

import threading

import numpy as np
import pytest
import torch
import transformers
from PySide6.QtCore import Qt

from explorer.app.panels.atlas import AtlasPanel
from explorer.app.state.session import Session
from explorer.app.thread import core_api
from explorer.core import head_description, head_scores
from explorer.core.decode import Decoder, RecordOptions
from explorer.core.runtime import from_tensors
from tests.app.model_thread import press_stop, tiny_worker
from tests.app.why_helpers import SIZES, shown
from tests.core.conftest import FAMILIES, randomize

N = 600                 # 600^2 entries per head: the maps are stored, yet the text is read on a thread of its own
LAYERS = 4
PROMPT = "To be, or not to be"


@pytest.fixture(scope="module")
def stored_trace():
    config_name, model_name, kwargs = FAMILIES["llama"]
    config = getattr(transformers, config_name)(**dict(kwargs, num_hidden_layers=LAYERS,
                                                      max_position_embeddings=N + 16))
    torch.manual_seed(4)
    hf = getattr(transformers, model_name)._from_config(config, attn_implementation="eager").eval()
    randomize(hf, 4)
    loaded = from_tensors(hf.config.to_dict(), hf.state_dict(), name="stored-llama")
    trace = Decoder(loaded, RecordOptions(), capacity=N + 4).prefill((np.arange(N) * 29) % 96)
    assert not any(layer.attn.on_demand for layer in trace.steps[0].layers)
    return loaded, trace


def finite_layers(panel) -> int:
    return int(np.isfinite(panel.map.image.image).all(axis=1).sum())


def entropy(trace) -> np.ndarray:
    """(L, N_Q): mean_i −Σ_j A_ij ln A_ij of every head, from the dense maps."""
    rows = []
    for layer in range(trace.model.n_layers):
        a = trace.attention(layer).astype(np.float64)                       # (head, q, k)
        rows.append(-(np.where(a > 0, a * np.log(np.where(a > 0, a, 1.0)), 0.0)).sum(-1).mean(-1))
    return np.stack(rows)


def test_cancel_stops_reading_stored_maps_at_the_next_head_and_resume_reads_on(qtbot, open_panel, stored_trace,
                                                                                monkeypatch):
    loaded, trace = stored_trace
    heads, gate, readers, real = trace.model.n_heads, threading.Event(), [], head_description.block_sums

    def block_sums(*args):
        readers.append(threading.current_thread())
        if len(readers) == heads + 1:         # the second layer's first head waits until the Cancel
            gate.wait(30)
        return real(*args)

    monkeypatch.setattr(head_description, "block_sums", block_sums)
    panel = open_panel(AtlasPanel, loaded.info, (1000, 320))
    panel.metric_box.setCurrentText("entropy")
    panel.session.set_trace(trace)
    qtbot.waitUntil(lambda: len(readers) > heads and finite_layers(panel) == 1, timeout=30000)
    qtbot.mouseClick(panel.cancel_button, Qt.MouseButton.LeftButton)
    gate.set()
    qtbot.waitUntil(lambda: not readers[0].is_alive(), timeout=30000)        # the reading thread ended
    assert panel.reader.sums.computed == 1 and len(readers) <= heads + 2    # stopped within the second layer
    panel.refresh()
    assert not panel.reader.running and panel.reader.started == 1            # a repaint asks nothing again
    assert finite_layers(panel) == 1 and panel.progress.isVisible() and panel.progress.value() == 1
    assert "cancelled" in panel.progress.format() and panel.cancel_button.text() == "Resume"

    qtbot.mouseClick(panel.cancel_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not panel.reader.running and finite_layers(panel) == LAYERS, timeout=30000)
    np.testing.assert_allclose(panel.map.image.image, entropy(trace), rtol=1e-4, atol=1e-6)
    assert not panel.progress.isVisible()


# ----- the scores of the heads, asked of the real model thread --------------------------------------------
@pytest.fixture(scope="module")
def model_thread(qapp, tmp_path_factory):
    worker = tiny_worker(qapp, tmp_path_factory, n_layers=LAYERS)
    yield worker
    worker.shutdown()


@pytest.fixture
def scoring(monkeypatch):
    """The model thread's scoring of the heads, counted; its first layer's scores wait for `gate`."""
    gate, jobs, layers = threading.Event(), [], []
    real_job, real_layer = core_api.NAMED_JOBS["HeadScoresJob"], head_scores.pattern_scores

    def job(*args):
        jobs.append(1)
        return real_job(*args)

    def pattern_scores(weights, n):
        layers.append(n)
        if len(layers) == 1:
            gate.wait(30)
        return real_layer(weights, n)

    monkeypatch.setitem(core_api.NAMED_JOBS, "HeadScoresJob", job)
    monkeypatch.setattr(head_scores, "pattern_scores", pattern_scores)
    return gate, jobs, layers


def atlas_on(qtbot, model_thread, trace) -> AtlasPanel:
    session = Session()
    session.set_model(model_thread.summary.info)
    panel = shown(qtbot, AtlasPanel(session), SIZES["wide"])
    panel.executor = model_thread.worker.run_job              # the app's model thread
    session.set_trace(trace)
    return panel


def induction(trace) -> np.ndarray:
    """(L, N_Q): mean_{i=N..T-1} A[i, i-N+1] on ids repeated twice (T = 2N)."""
    n = trace.n_tokens // 2
    rows = np.arange(n, trace.n_tokens)
    return np.stack([trace.attention(layer)[:, rows, rows - n + 1].mean(-1) for layer in range(trace.model.n_layers)])


@pytest.mark.parametrize("how", ["cancel", "stop"])
def test_cancel_or_stop_stops_the_scoring_on_the_model_thread_until_resume(qtbot, model_thread, scoring, how):
    gate, jobs, layers = scoring
    trace = model_thread.run(PROMPT)
    panel = atlas_on(qtbot, model_thread, trace)
    qtbot.waitUntil(lambda: len(layers) == 1, timeout=30000)               # scoring, on the model thread
    if how == "cancel":
        assert panel.cancel_button.isVisible() and panel.cancel_button.text() == "Cancel"
        qtbot.mouseClick(panel.cancel_button, Qt.MouseButton.LeftButton)
    else:
        press_stop(model_thread, panel.session)
    gate.set()
    model_thread.idle()
    panel.refresh()
    assert len(layers) == 1 < LAYERS and jobs == [1]                        # cancelled there; not asked again
    assert panel.scores is None and not panel.asker.call.running
    assert "Stopped" in panel.caption.text() and "Resume" in panel.caption.text()
    assert panel.cancel_button.isVisible() and panel.cancel_button.text() == "Resume"

    qtbot.mouseClick(panel.cancel_button, Qt.MouseButton.LeftButton)       # the person asks again
    qtbot.waitUntil(lambda: panel.scores is not None, timeout=30000)
    assert jobs == [1, 1] and not panel.cancel_button.isVisible()
    np.testing.assert_allclose(panel.scores.induction, induction(panel.scores.trace), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(panel.values, panel.scores.induction)

    press_stop(model_thread, panel.session)                               # idle: the scores shown stay
    model_thread.idle()
    assert jobs == [1, 1] and panel.values is not None and "Stopped" not in panel.caption.text()


def test_a_new_run_after_a_stop_scores_the_heads_again(qtbot, model_thread, scoring):
    gate, jobs, layers = scoring
    panel = atlas_on(qtbot, model_thread, model_thread.run(PROMPT))
    qtbot.waitUntil(lambda: len(layers) == 1, timeout=30000)
    press_stop(model_thread, panel.session)
    gate.set()
    model_thread.idle()
    assert jobs == [1] and panel.scores is None
    panel.session.set_trace(model_thread.run(PROMPT + " that is"))
    qtbot.waitUntil(lambda: panel.scores is not None, timeout=30000)
    assert jobs == [1, 1] and "Stopped" not in panel.caption.text()
