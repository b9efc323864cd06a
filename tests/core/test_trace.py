"""The trace's derived views agree with what the engine recorded, for every family."""
from __future__ import annotations

import numpy as np

from explorer.core.decode import Decoder, RecordOptions

PROMPT = np.array([3, 14, 15, 9, 26, 5], dtype=np.int64)


def _trace(loaded, record: RecordOptions, steps: int = 3):
    decoder = Decoder(loaded, record)
    decoder.prefill(PROMPT)
    for _ in range(steps):
        decoder.step()
    return decoder.trace


def test_head_out_derived_from_weights_and_values_equals_the_recorded_one(loaded):
    full = _trace(loaded, RecordOptions())
    compact = _trace(loaded, RecordOptions(head_out=False, pre_rope=False))
    for layer in range(loaded.config.n_layers):
        for head in range(loaded.config.n_heads):
            recorded = full.head_out(layer, head)
            assert recorded.shape == (full.n_tokens, loaded.config.d_v)
            np.testing.assert_allclose(compact.head_out(layer, head), recorded, atol=1e-5)


def test_nbytes_counts_each_shared_array_once(loaded):
    trace = _trace(loaded, RecordOptions())
    unique = {}
    stack = list(trace.steps)
    while stack:
        obj = stack.pop()
        if isinstance(obj, np.ndarray):
            unique[id(obj)] = obj.nbytes
        elif isinstance(obj, (tuple, list)):
            stack.extend(obj)
        elif hasattr(obj, "__dataclass_fields__"):
            stack.extend(getattr(obj, f) for f in obj.__dataclass_fields__ if not f.startswith("_"))
    assert trace.nbytes() == sum(unique.values())
    assert trace.nbytes() > 0
