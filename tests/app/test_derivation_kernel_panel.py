"""Show the work with a kernel experiment on (the Experiments list): the panel writes the kernel the layer used,
"A_ij = relu(S_ij) / Z_i" or exp at its temperature, walks f(S_ij) and Z_i by it, and its A_ij is the recorded one.
The model is the tiny random llama of tests/core/tiny_checkpoints.py run through the real core under the kernel;
the expected A_ij is the kernel written out here from the recorded Q and K."""
from __future__ import annotations

import numpy as np
import pytest

from explorer.core.intervention import Intervention, Kernel, KernelChoice
from tests.app.derivation_panel import derivation_panel

ROW, COLUMN = 6, 2


def traced(kernel: Kernel):
    from explorer.core.decode import Decoder
    from explorer.core.runtime import from_tensors
    from tests.core.tiny_checkpoints import LLAMA_CONFIG, llama_tensors

    config = dict(LLAMA_CONFIG, vocab_size=96)
    loaded = from_tensors(config, llama_tensors(config, seed=2), name="tiny-llama")
    intervention = Intervention(kernels=(KernelChoice(kernel, layers=(1,)),))
    decoder = Decoder(loaded, intervention=intervention)
    decoder.prefill(np.arange(8) * 7 % 90)
    decoder.step()
    return loaded, decoder.trace, intervention


def expected_weight(trace, head: int, kernel: Kernel) -> float:
    q = trace.q(1, head)[ROW].astype(np.float64)
    s = trace.k(1, trace.kv_head_of(head))[: ROW + 1].astype(np.float64) @ q / np.sqrt(q.shape[0])
    f = np.exp(s / kernel.temperature - (s / kernel.temperature).max()) if kernel.name == "exp" else np.maximum(s, 0)
    return float(f[COLUMN] / f.sum())


def show(qtbot, kernel: Kernel, head: int = 1):
    loaded, trace, intervention = traced(kernel)
    panel = derivation_panel(qtbot, loaded, trace, intervention)
    panel.session.select(layer=1, head=head, token=ROW, key=COLUMN)
    return panel, trace


@pytest.mark.parametrize("kernel, words", [(Kernel("relu"), "Aij = relu(Sij) / Zi"),
                                           (Kernel("exp", 0.5), "Aij = exp(Sij/τ − maxj Sij/τ) / Zi, τ = 0.5")])
def test_the_panel_writes_the_kernel_the_layer_used(qtbot, kernel, words):
    panel, trace = show(qtbot, kernel)
    text = panel.text.toPlainText()
    assert words in text and "the experiment's kernel in this layer" in text
    assert "relu(" in panel.formula if kernel.name == "relu" else "τ = 0.5" in panel.formula
    weight = expected_weight(trace, 1, kernel)
    assert panel.derived.weight == pytest.approx(weight, abs=1e-6)
    assert f"= {weight:.6g}" in text and panel.derived.deltas["A row"] <= 1e-6
    if kernel.name == "relu":
        assert "max(0, " in text and "exp(" not in text.split("per dimension")[0]
    else:
        assert "Sij/τ = " in text and "row max m = maxj Sij/τ" in text


def test_a_layer_without_the_kernel_shows_the_softmax(qtbot):
    panel, _ = show(qtbot, Kernel("relu"))
    panel.session.select(layer=0, head=1, token=ROW)
    text = panel.text.toPlainText()
    assert "Aij = exp(Sij − maxj Sij) / Zi" in text and "relu" not in text and "experiment's kernel" not in text
    assert panel.derived.max_delta <= 1e-5


def test_under_linear_the_map_spans_the_weights_below_0_and_above_1(qtbot):
    panel, trace = show(qtbot, Kernel("linear"))
    weights = trace.attention_head(1, 1)
    assert weights.min() < 0, "the linear kernel must give a negative weight here, or the test shows nothing"
    low, high = panel.map.image.getLevels()
    assert low == pytest.approx(float(weights.min())) and high == pytest.approx(max(1.0, float(weights.max())))
    assert "Aij = Sij / Zi" in panel.text.toPlainText()


def test_a_nearly_cancelling_linear_z_is_said_to_magnify_rounding(qtbot):
    from dataclasses import replace

    from explorer.app.panels.derivation import derivation_html

    panel, trace = show(qtbot, Kernel("linear"))
    cell = replace(panel.derived, row_f=np.array([5.0, -4.9]), z=0.1, column=0)          # kappa = 9.9 / 0.1
    assert cell.conditioning == pytest.approx(99.0)
    text = derivation_html(cell, trace.token_text)
    assert "nearly cancels" in text and "= 99)" in text
    same_signs = replace(cell, row_f=np.array([5.0, 4.9]), z=9.9)                          # kappa = 1
    assert "nearly cancels" not in derivation_html(same_signs, trace.token_text)
