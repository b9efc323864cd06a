"""Show the work under an experiment: a head whose O_h was replaced (zero or mean ablation, "only these heads",
a patch) is derived as A.V, what it would have been, beside the output the model really went on with, and the
gap between the two is reported as the experiment's doing, not a mismatch. Heads left alone keep the check.

The independent expectation of the real output is transformers' eager Llama with the same edit written by a
pre-hook on o_proj (tests/core/test_head_out_ablation.py); A.V is checked against the unedited formula.
"""
from __future__ import annotations

import numpy as np
import pytest

from explorer.core import derivation
from explorer.core.decode import Decoder
from explorer.core.intervention import HeadAblation, HeadPatch, Intervention, KeepOnly
from explorer.core.recording import RecordOptions
from explorer.core.runtime import from_tensors
from tests.core.conftest import make_hf_model
from tests.core.test_head_out_ablation import T, transformers_with_the_edit  # its mean is over T prompt rows

STEPS = 2
PATCH = np.random.default_rng(8).normal(size=(3, 16)).astype(np.float32)     # rows 4..6 of L1.H2's O_h

CASES = {   # the intervention, the head it replaces, the words that must name how
    "zero": (Intervention(ablations=(HeadAblation(1, 2),)), (1, 2), "zero ablation"),
    "mean": (Intervention(ablations=(HeadAblation(0, 1, "mean"),)), (0, 1), "mean ablation"),
    "keep-only": (Intervention(keep_only=KeepOnly(((1, 0),))), (1, 3), "only these heads"),
    "patch": (Intervention(head_patches=(HeadPatch(1, 2, PATCH, start=4),)), (1, 2), "patched"),
}


@pytest.fixture(scope="module")
def hf_llama():
    return make_hf_model("llama", seed=4)


def run(hf_llama, intervention, record=RecordOptions()):
    loaded = from_tensors(hf_llama.config.to_dict(), hf_llama.state_dict(), name="tiny-llama")
    decoder = Decoder(loaded, record, capacity=T + STEPS + 1, intervention=intervention)
    decoder.prefill(np.random.default_rng(2).integers(0, 96, T))
    for _ in range(STEPS):
        decoder.step()
    return decoder.trace


def a_times_v(trace, layer, head, row):
    """y_i = sum_j A_ij v_j from the recorded A and V, in float64 (the formula, not the derivation)."""
    weights = trace.attention_head(layer, head)[row].astype(np.float64)
    values = trace.v(layer, trace.kv_head_of(head)).astype(np.float64)
    return weights[: values.shape[0]] @ values


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("record", [RecordOptions(), RecordOptions(head_out=True)], ids=["derived", "recorded"])
def test_a_replaced_head_reports_the_replacement_and_the_real_output(hf_llama, name, record):
    intervention, (layer, head), words = CASES[name]
    trace = run(hf_llama, intervention, record)
    _, edited = transformers_with_the_edit(hf_llama, trace.token_ids, intervention)   # (N_Q, T, d) per layer
    row = 5 if name == "patch" else T + 1                    # a patched row of the prompt; the last decoding step
    cell = derivation.derive_cell(trace, layer, head, row, 2, intervention=intervention)
    assert cell.replaced_by is not None and words in cell.replaced_by
    np.testing.assert_allclose(cell.used_output, edited[layer][head, row], atol=1e-5, rtol=0)
    np.testing.assert_allclose(cell.output, a_times_v(trace, layer, head, row), atol=1e-6, rtol=0)
    gap = float(np.abs(cell.output - edited[layer][head, row]).max())
    assert gap > 1e-2, "the experiment must change this head's output, or the test shows nothing"
    assert cell.replaced_gap == pytest.approx(gap, abs=1e-5)
    assert "y = sum_j A_ij v_j" not in cell.deltas and cell.max_delta <= 1e-5, cell.deltas
    if name == "zero":
        np.testing.assert_array_equal(cell.used_output, 0.0)


def test_without_the_intervention_the_record_still_says_the_head_was_replaced(hf_llama):
    intervention, (layer, head), _ = CASES["zero"]
    trace = run(hf_llama, intervention)
    cell = derivation.derive_cell(trace, layer, head, 3, 1)
    assert cell.replaced_by == derivation.REPLACED and cell.max_delta <= 1e-5


@pytest.mark.parametrize("name", sorted(CASES))
def test_heads_left_alone_keep_the_check(hf_llama, name):
    intervention, (layer, head), _ = CASES[name]
    trace = run(hf_llama, intervention)
    kept = (1, 0) if name == "keep-only" else (layer, (head + 1) % trace.model.n_heads)
    cases = [(*kept, T + 1)] + ([(layer, head, 2)] if name == "patch" else [])   # a patch's head, at a row
    for l, h, r in cases:                                                         # it did not patch, is A.V
        cell = derivation.derive_cell(trace, l, h, r, 0, intervention=intervention)
        assert cell.replaced_by is None and cell.used_output is None
        assert cell.deltas["y = sum_j A_ij v_j"] <= 1e-5
        np.testing.assert_allclose(cell.output, trace.head_out(l, h)[r], atol=1e-5, rtol=0)


def test_an_unedited_run_shows_no_replacement_and_a_wrong_record_is_a_mismatch(hf_llama):
    """The check still bites: O_h recorded as something else than A.V, with no experiment, is a large |delta|."""
    from dataclasses import replace

    trace = run(hf_llama, None, RecordOptions(head_out=True))
    cell = derivation.derive_cell(trace, 1, 2, T + 1, 0, intervention=Intervention())
    assert cell.replaced_by is None and cell.max_delta <= 1e-5
    step = trace.steps[-1]
    attn = step.layers[1].attn
    broken_layer = replace(step.layers[1], attn=replace(attn, head_out=np.zeros_like(attn.head_out)))
    broken_step = replace(step, layers=(*step.layers[:1], broken_layer, *step.layers[2:]))
    broken = replace(trace, steps=(*trace.steps[:-1], broken_step))
    cell = derivation.derive_cell(broken, 1, 2, T + 1, 0)
    assert cell.replaced_by is None and cell.deltas["y = sum_j A_ij v_j"] > 1e-2
