"""The kernel stop's question "with the linear kernel, can a weight in A be negative?" gets its answer from the
trace shown: under f_κ(x) = x, A = Z⁻¹ S has negative weights whose rows still sum to 1; under exp none.

Expectation: a loop over every head, row and column of layer 1's weights of the bundled GQA model run with the
linear kernel in layer 1 (as the stop's Show me sets it), and with its own softmax.
"""
from __future__ import annotations

import numpy as np
import pytest

import explorer
from explorer.app.widgets.learn_tour import load_stops
from explorer.views import try_answers

PROMPT = "To be, or not to be, that is the question:"


@pytest.fixture(scope="module")
def model():
    return explorer.load("shakespeare-gqa")


def loop_minimum(trace, layer):
    weights = trace.attention(layer)
    best = (np.inf, None)
    for head in range(weights.shape[0]):
        for i in range(weights.shape[1]):
            for j in range(weights.shape[2]):
                if weights[head, i, j] < best[0]:
                    best = (float(weights[head, i, j]), (head, i, j))
    return best


def test_the_linear_kernel_has_negative_weights_and_the_answer_finds_the_smallest(model):
    trace = model.run(PROMPT, kernel="linear", kernel_layers=[1]).trace
    smallest, (head, i, j) = loop_minimum(trace, 1)
    assert smallest < 0                                     # the fact the answer reports, independently seen
    found = try_answers.answer("negative_weight", trace, 1)
    assert (found.layer, found.head, found.panel) == (1, head, "attention")
    assert found.text.startswith(f"Yes: layer 1, head {head}, A[{i}, {j}] = {smallest:.3f}"), found.text
    row_sum = sum(trace.attention(1)[head, i, k] for k in range(trace.attention(1).shape[2]))
    assert f"still sums to {row_sum:.3f}" in found.text and abs(row_sum - 1) < 1e-3


def test_under_softmax_the_answer_says_no(model):
    trace = model.run(PROMPT).trace
    smallest, _ = loop_minimum(trace, 1)
    assert smallest >= 0
    assert try_answers.answer("negative_weight", trace, 1).text.startswith("No: every weight of layer 1 is 0 or more")


def test_the_kernel_stop_links_the_question_to_this_answer_in_its_kernels_layer():
    stop = next(s for s in load_stops() if s.id == "kernel")
    linked = [t for t in stop.tries if t.answer == "negative_weight"]
    assert linked and all(t.layer == stop.state.layer and stop.state.kernel == "linear" for t in linked)
