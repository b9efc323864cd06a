"""Show the work under a kernel experiment: the derivation forms A_ij = f_kappa(S_ij) / Z_i with the kernel the
record says the model used (exp at a temperature, relu, linear), not the softmax, so its "A row" check holds.

Independent expectations: the kernel written out here in numpy from the recorded Q and K, and transformers'
eager Llama with an attention function registered to apply the same kernel (tests/core/intervention_reference.py).
The model is the tiny random llama of tests/core/tiny_checkpoints.py, given to both.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch
import transformers

from explorer.core import derivation
from explorer.core.decode import Decoder
from explorer.core.intervention import SOFTMAX, Intervention, Kernel, KernelChoice
from explorer.core.runtime import from_tensors
from tests.core import intervention_reference as ref
from tests.core.tiny_checkpoints import LLAMA_CONFIG, llama_tensors

T, STEPS, LAYER = 9, 2, 1             # the kernel is set in layer 1 only; layer 0 keeps the softmax
CONFIG = dict(LLAMA_CONFIG, vocab_size=96)
KERNELS = {"exp-0.5": Kernel("exp", 0.5), "exp-3": Kernel("exp", 3.0), "relu": Kernel("relu"),
           "linear": Kernel("linear")}
ROWS = [(4, 0), (T - 1, 0), (T, 1), (T + STEPS - 1, STEPS)]       # (row, step): prompt rows and decoding steps


@pytest.fixture(scope="module")
def tensors():
    """The tiny llama with W^Q and W^K three times larger: scores far enough apart for the kernels to differ."""
    weights = llama_tensors(CONFIG, seed=6)
    return {name: w * 3.0 if name.endswith(("q_proj.weight", "k_proj.weight")) else w for name, w in weights.items()}


@pytest.fixture(scope="module")
def hf_llama(tensors):
    model = transformers.LlamaForCausalLM._from_config(transformers.LlamaConfig(**CONFIG), attn_implementation="eager")
    model.load_state_dict(tensors)
    return model.eval()


@pytest.fixture(scope="module", params=sorted(KERNELS))
def run(request, tensors):
    kernel = KERNELS[request.param]
    loaded = from_tensors(CONFIG, tensors, name="tiny-llama")
    decoder = Decoder(loaded, capacity=T + STEPS + 1,
                      intervention=Intervention(kernels=(KernelChoice(kernel, layers=(LAYER,)),)))
    decoder.prefill(np.random.default_rng(5).integers(0, 96, T))
    for _ in range(STEPS):
        decoder.step()
    return kernel, decoder.trace


def written_out(trace, head: int, row: int, kernel: Kernel) -> np.ndarray:
    """A_i of the kernel from the recorded q_i and K, causal: (row + 1,) float64."""
    q = trace.q(LAYER, head)[row].astype(np.float64)
    keys = trace.k(LAYER, trace.kv_head_of(head))[: row + 1].astype(np.float64)
    s = keys @ q / np.sqrt(CONFIG["head_dim"])                               # S_ij, every j <= i visible
    if kernel.name == "exp":
        f = np.exp(s / kernel.temperature - np.max(s / kernel.temperature))
    else:
        f = s if kernel.name == "linear" else np.maximum(s, 0.0)
    return f / f.sum()


def derived_row(cell) -> np.ndarray:
    return cell.row_f / cell.z


def tolerance(cell, atol: float) -> np.ndarray:
    """atol where Z_i sums positive terms (exp, relu: kappa_i = 1, |A_ij| <= 1); under linear, Z_i is a signed
    sum and float32 rounding of it reaches A_ij as |A_ij| kappa_i times larger (kappa_i = sum|S| / |Z_i|)."""
    return atol * cell.conditioning * np.maximum(1.0, np.abs(derived_row(cell)))


@pytest.mark.parametrize("row, upto", ROWS)
def test_the_derived_row_is_the_recorded_one_by_the_records_kernel(run, row, upto):
    kernel, trace = run
    for head in range(CONFIG["num_attention_heads"]):
        cell = derivation.derive_cell(trace, LAYER, head, row, 1, upto)
        assert cell.kernel == kernel
        recorded = trace.attention_head(LAYER, head, upto)[row].astype(np.float64)
        if kernel.name != "linear":
            assert cell.conditioning == pytest.approx(1.0, abs=1e-12)
        gap = np.abs(derived_row(cell) - recorded[: cell.row_f.shape[0]])
        assert np.all(gap <= tolerance(cell, 1e-6)), (gap.max(), cell.conditioning)
        assert cell.deltas["A row"] == pytest.approx(gap.max(), abs=1e-12)
        assert cell.max_delta <= tolerance(cell, 1e-5).max(), (cell.deltas, cell.conditioning)
        expected = written_out(trace, head, row, kernel)
        assert np.all(np.abs(derived_row(cell)[: row + 1] - expected) <= tolerance(cell, 1e-9)[: row + 1])
        np.testing.assert_array_equal(cell.row_f[row + 1:], 0.0)                # masked keys add nothing
        assert cell.weight == pytest.approx(cell.row_f[1] / cell.z, rel=1e-12)


def test_the_softmax_would_not_explain_the_record(run):
    """The check can fail: the same scores through the softmax miss the recorded row by far."""
    kernel, trace = run
    cell = derivation.derive_cell(trace, LAYER, 0, T - 1, 1, 0)
    softmax = np.exp(cell.row_scores - cell.row_scores.max())
    recorded = trace.attention_head(LAYER, 0, 0)[T - 1].astype(np.float64)
    assert np.abs(softmax / softmax.sum() - recorded[: softmax.shape[0]]).max() > 1e-2


def test_a_layer_without_the_kernel_keeps_the_softmax(run):
    _, trace = run
    cell = derivation.derive_cell(trace, 0, 2, T, 3, 1)
    assert cell.kernel == SOFTMAX and cell.max_delta <= 1e-5, cell.deltas
    assert cell.weight == pytest.approx(np.exp(cell.score - cell.row_max) / cell.z, rel=1e-12)


def test_the_derived_row_is_what_transformers_computes_with_the_kernel(run, hf_llama):
    kernel, trace = run
    with ref.registered_attention(hf_llama, kernels={LAYER: (kernel.name, kernel.temperature)}), torch.no_grad():
        out = hf_llama(torch.as_tensor(trace.token_ids)[None], output_attentions=True)
    expected = out.attentions[LAYER][0].double().numpy()                        # (N_Q, T, T)
    for head in range(CONFIG["num_attention_heads"]):
        for row, upto in ROWS:
            cell = derivation.derive_cell(trace, LAYER, head, row, 0, upto)
            gap = np.abs(derived_row(cell) - expected[head, row, : cell.row_f.shape[0]])
            assert np.all(gap <= tolerance(cell, 1e-5)), (gap.max(), cell.conditioning)


@pytest.mark.parametrize("kernel, words", [(SOFTMAX, "exp(S_{ij} − max_j S_{ij})"), (Kernel("exp", 0.5), "τ = 0.5"),
                                           (Kernel("relu"), "relu(S_{ij}) / Z_i"), (Kernel("linear"), "S_{ij} / Z_i")])
def test_the_formula_names_the_kernel(kernel, words):
    assert words in derivation.kernel_formula(kernel)
