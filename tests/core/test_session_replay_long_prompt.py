"""A session saved at long context (>= 1,024 tokens: the prefill's maps are rebuilt on demand) replays exactly.

The session file (explorer/views/session_state.py) holds the model, the prompt and its ids, the sampling,
the forced tokens and the step count. Opening it is the model thread's Replay (app/thread): prefill the ids,
force, step. The replay must give the same ids, the same logits, and on-demand maps equal to the original's.
The independent expectation is the original run itself, made by the Python API on another decoder.
"""
from __future__ import annotations

import numpy as np
import pytest

from explorer.app.thread.core_api import CoreApi
from explorer.app.thread.worker import ModelWorker
from explorer.core.attention_maps import ON_DEMAND_FROM
from explorer.views import session_state
from tests.core.conftest import FORCED, MIN_TOKENS, long_prompt

pytestmark = pytest.mark.usefixtures("own_home")


def test_the_prompt_is_long_enough_for_on_demand_maps(original):
    prefill = original.trace.steps[0]
    assert prefill.n_new >= MIN_TOKENS and prefill.n_new ** 2 >= ON_DEMAND_FROM
    assert all(layer.attn.on_demand for layer in prefill.layers)


def test_the_session_file_keeps_the_long_prompt_and_its_branch(original, tmp_path):
    state = session_state.load(original.save_session(tmp_path / "long.json"))
    assert state.prompt_ids == tuple(int(i) for i in original.ids[: original.trace.steps[0].n_new])
    assert state.forced == ((2, FORCED),) and state.steps == original.trace.n_steps == 4
    assert state.prompt == original.prompt


def test_the_app_replays_a_long_session_exactly(qtbot, original, tmp_path):
    """The model thread opens the saved session: same ids, same candidates, same on-demand maps, bit for bit."""
    state = session_state.load(original.save_session(tmp_path / "long.json"))
    replayed = _on_the_model_thread(qtbot, state.model, lambda w: w.replay(state.prompt_ids, state.forced, state.steps),
                                    state.steps)
    _assert_same_trace(replayed, original.trace)


def test_a_long_session_recorded_in_float16_replays_exactly(qtbot, long_model, tmp_path):
    """The app's half-precision trace (Q, K, V in float16): the maps rebuilt from them replay the same."""
    ids = long_model.loaded.tokenizer.encode(long_prompt(long_model)).ids

    def run(worker):
        worker.prefill(list(ids))
        worker.step()
        worker.force(FORCED, at_steps=2)
        worker.step()

    made = _on_the_model_thread(qtbot, long_model.reference, run, 3, record_dtype="float16")
    assert made.steps[0].layers[0].attn.q.dtype == np.float16 and made.steps[0].layers[0].attn.on_demand
    state = session_state.SessionState.of(long_model.reference, long_prompt(long_model),
                                          session_state.SamplingSettings(), made)
    session_state.save(tmp_path / "half.json", state)
    state = session_state.load(tmp_path / "half.json")
    replayed = _on_the_model_thread(qtbot, state.model, lambda w: w.replay(state.prompt_ids, state.forced, state.steps),
                                    state.steps, record_dtype="float16")
    _assert_same_trace(replayed, made)


def _on_the_model_thread(qtbot, model: str, requests, n_steps: int, record_dtype: str = "float32"):
    """The trace the app's model thread hands back after `requests(worker)`, once it has n_steps steps."""
    worker = ModelWorker(CoreApi.real())
    try:
        worker.set_recording(record_dtype)
        with qtbot.waitSignal(worker.model_loaded, timeout=60000):
            worker.load(model)
        traces = []
        worker.trace_ready.connect(traces.append)
        requests(worker)
        qtbot.waitUntil(lambda: not worker.busy and traces and traces[-1].n_steps == n_steps, timeout=120000)
    finally:
        assert worker.shutdown(10.0)
    return traces[-1]


def _assert_same_trace(replayed, trace) -> None:
    np.testing.assert_array_equal(replayed.token_ids, trace.token_ids)
    assert [s.chosen_id for s in replayed.steps] == [s.chosen_id for s in trace.steps]
    assert [s.forced for s in replayed.steps] == [s.forced for s in trace.steps]
    for mine, theirs in zip(replayed.steps, trace.steps):
        np.testing.assert_array_equal(mine.top_ids, theirs.top_ids)
        np.testing.assert_array_equal(mine.top_probs, theirs.top_probs)
    _assert_same_maps(replayed, trace)


def test_a_long_session_replayed_through_the_api_gives_the_same_logits(long_model, original, tmp_path):
    """What Run.save_session promises: the file rebuilds this very trace, logits at every position included."""
    state = session_state.load(original.save_session(tmp_path / "long.json"))
    replay = long_model.run(list(state.prompt_ids), steps=0)
    forced = dict(state.forced)
    for index in range(state.steps):
        if index in forced:
            replay.force(forced[index])
        if index < state.steps - 1:
            replay.step()
    np.testing.assert_array_equal(replay.ids, original.ids)
    np.testing.assert_array_equal(replay.logits, original.logits)
    _assert_same_maps(replay.trace, original.trace)


def _assert_same_maps(replayed, trace) -> None:
    """Every head's map, prefill rebuilt on demand and decoded rows recorded, equal entry for entry;
    the rebuilt prefill also equals softmax(Q K^T * scale) computed here from the original's Q and K."""
    info = trace.model
    for layer in range(info.n_layers):
        for head in range(info.n_heads):
            expected = trace.attention_head(layer, head)
            np.testing.assert_array_equal(replayed.attention_head(layer, head), expected)
        record = trace.steps[0].layers[layer].attn
        assert replayed.steps[0].layers[layer].attn.on_demand
        q, k = record.q[0].astype(np.float64), record.k[record.kv_head_of(0)].astype(np.float64)
        s = q @ k.T * record.scale
        s[np.triu_indices(len(s), 1)] = -np.inf                                  # causal
        a = np.exp(s - s.max(axis=1, keepdims=True))
        n = record.n_new
        np.testing.assert_allclose(replayed.attention_head(layer, 0)[:n, :n], a / a.sum(axis=1, keepdims=True),
                                   atol=1e-5, rtol=0)
        assert replayed.steps[0].layers[layer].attn.q.dtype == record.q.dtype
