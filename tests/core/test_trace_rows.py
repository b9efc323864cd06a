"""One row of a trace's mask, weights and head output, and a window of a head's map, equal the dense routes
(Trace.mask, attention_matrix, Trace.head_out) they stand in for at long prompts: for a prompt's rows and a
decoding step's, stored and on-demand weights, a sliding window, recorded and derived head outputs."""
from __future__ import annotations

import numpy as np
import pytest

from explorer.core import trace_rows
from explorer.core.decode import Decoder, RecordOptions
from explorer.core.runtime import from_tensors
from explorer.views.maps import attention_matrix
from tests.core.conftest import make_hf_model


@pytest.fixture(scope="module", params=[("llama", "on_demand", False), ("mistral", "stored", True)])
def trace(request):
    family, attention, head_out = request.param
    hf_model = make_hf_model(family)
    loaded = from_tensors(hf_model.config.to_dict(), hf_model.state_dict())
    decoder = Decoder(loaded, RecordOptions(attention=attention, head_out=head_out), capacity=64)
    decoder.prefill((np.arange(30) * 5 + 2) % 96)
    decoder.step()
    return decoder.step()                                     # 30 prompt rows and two steps' rows


@pytest.mark.parametrize("row", [0, 17, 29, 30, 31])
def test_a_row_equals_the_dense_routes(trace, row):
    upto = trace.n_steps - 1
    for layer in range(trace.model.n_layers):
        np.testing.assert_array_equal(trace_rows.mask_row(trace, layer, row, upto), trace.mask(layer, upto)[row])
        for head in (0, trace.model.n_heads - 1):
            np.testing.assert_allclose(trace_rows.head_out_row(trace, layer, head, row, upto),
                                       trace.head_out(layer, head, upto)[row], atol=1e-6)


@pytest.mark.parametrize("cell", [(0, 0), (20, 3), (31, 30)])
def test_a_window_is_the_dense_maps_cells(trace, cell):
    upto, (row, column) = trace.n_steps - 1, cell
    shown = trace_rows.window(trace, 1, 2, row, column, upto, size=8)
    dense = attention_matrix(trace, 1, 2, upto)                               # masked cells NaN
    rows, cols = shown.matrix.shape
    assert shown.extent == dense.shape and (rows, cols) == (8, 8)
    assert shown.top <= row < shown.top + rows and shown.left <= column < shown.left + cols
    np.testing.assert_allclose(shown.matrix, dense[shown.top: shown.top + rows, shown.left: shown.left + cols],
                               atol=1e-7)
