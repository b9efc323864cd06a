"""The trace's derived views agree with what the engine recorded, for every family."""
from __future__ import annotations

import copy
import pickle
from dataclasses import replace

import numpy as np
import pytest

from explorer.core.decode import Decoder, RecordOptions

PROMPT = np.array([3, 14, 15, 9, 26, 5], dtype=np.int64)


def _trace(loaded, record: RecordOptions, steps: int = 3):
    decoder = Decoder(loaded, record)
    decoder.prefill(PROMPT)
    for _ in range(steps):
        decoder.step()
    return decoder.trace


FULL = RecordOptions(head_out=True, pre_rope=True)


def test_head_out_derived_from_weights_and_values_equals_the_recorded_one(loaded):
    full = _trace(loaded, FULL)
    compact = _trace(loaded, RecordOptions())
    for layer in range(loaded.config.n_layers):
        for head in range(loaded.config.n_heads):
            recorded = full.head_out(layer, head)
            assert recorded.shape == (full.n_tokens, loaded.config.d_v)
            np.testing.assert_allclose(compact.head_out(layer, head), recorded, atol=1e-5)


def test_q_and_k_rotated_back_equal_the_recorded_ones_before_rope(loaded):
    full = _trace(loaded, FULL)
    compact = _trace(loaded, RecordOptions())
    rotated = [layer for layer in range(loaded.config.n_layers) if full.has_pre_rope(layer)]
    assert bool(rotated) == (loaded.config.positional == "rope")
    for layer in rotated:
        assert compact.steps[0].layers[layer].attn.q_pre_rope is None and compact.has_pre_rope(layer)
        for head in range(loaded.config.n_heads):
            recorded = full.q_pre_rope(layer, head)
            assert recorded.shape == (full.n_tokens, loaded.config.d_qk)
            assert not np.allclose(recorded, full.q(layer, head), atol=1e-3)   # RoPE did change Q
            np.testing.assert_allclose(compact.q_pre_rope(layer, head), recorded, atol=2e-5, rtol=1e-5)
        for kv_head in range(full.steps[0].layers[layer].attn.k.shape[0]):
            np.testing.assert_allclose(compact.k_pre_rope(layer, kv_head), full.k_pre_rope(layer, kv_head),
                                       atol=2e-5, rtol=1e-5)


def _pickled_array_bytes(obj) -> int:
    """Bytes of the distinct arrays under obj, as pickle (protocol 5) hands them out of band: pickle's memo
    writes an object held twice once, so a shared array is one buffer (an oracle independent of nbytes_of)."""
    buffers = []
    pickle.dumps(obj, protocol=5, buffer_callback=buffers.append)
    return sum(buffer.raw().nbytes for buffer in buffers)


def test_nbytes_counts_each_shared_array_once(loaded):
    trace = _trace(loaded, FULL)
    assert trace.nbytes() == sum(_pickled_array_bytes(step) for step in trace.steps) > 0
    step = trace.steps[-1]
    layers = step.layers
    shared = replace(step, layers=layers + layers)             # the same records twice: no new bytes
    assert shared.nbytes == _pickled_array_bytes(shared) == _pickled_array_bytes(step)
    copied = replace(step, layers=layers + copy.deepcopy(layers))
    assert copied.nbytes == _pickled_array_bytes(copied) > step.nbytes


@pytest.mark.parametrize("kind", [{}, {"sliding_window": 3}, {"n_kv_heads": 1}, {"encoder_only": True}])
def test_one_head_assembled_alone_equals_that_head_of_the_layer(kind):
    from tests.app.synthetic_trace import build_trace

    trace = build_trace(n_layers=2, n_heads=4, prompt_len=6, steps=0 if kind.get("encoder_only") else 9, **kind)
    for step in (None, 0, trace.n_steps // 2):
        for layer in range(2):
            alone = [trace.attention_head(layer, head, step) for head in range(4)]
            whole = trace.attention(layer, step)
            for head in range(4):
                np.testing.assert_array_equal(alone[head], whole[head])
            mask = trace.mask(layer, step)
            assert not whole[:, ~mask].any() and np.allclose(whole.sum(axis=2), 1.0, atol=1e-5)
