"""Stop 3's question "which key does the last query score highest? Is that the token it attends to most?" is
answered from the trace shown, in the layer and head the person is looking at: the top score of the last query's
row, S = q_i k_j / √d_QK, and the key its row of A weighs most (the same key under exp, which keeps the order).

Expectation: the scores recomputed by hand from the trace's own q and k rows (a dot product and the scale, the
head's K/V head by N_Q / N_KV), and A's argmax found by a loop, for the bundled GQA twin with Show me's prompt.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

import explorer
from explorer.app.widgets.learn_tour import load_stops
from explorer.views import try_answers

PROMPT = "To be, or not to be, that is the question:"


@pytest.fixture(scope="module")
def model():
    return explorer.load("shakespeare-gqa")


def by_hand(trace, layer, head):
    """(key scored highest, its score, key weighed most) for the last query, from q and k rows."""
    info = trace.model
    q = trace.q(layer, head)[-1]
    k = trace.k(layer, head // (info.n_heads // info.n_kv_heads))
    scores = [float(np.dot(q, k[j])) / math.sqrt(info.d_qk) for j in range(len(k))]
    row = trace.attention_head(layer, head)[-1]
    weighed = max(range(len(row)), key=lambda j: row[j])
    scored = max(range(len(scores)), key=lambda j: scores[j])
    return scored, scores[scored], weighed


def test_the_stop_asks_for_the_answer_from_the_trace():
    stop = next(s for s in load_stops() if s.id == "qkv")
    assert stop.tries[0].answer == "top_key"


@pytest.mark.parametrize(("layer", "head"), [(0, 0), (1, 4), (3, 5)])
def test_the_top_key_is_the_one_the_scores_and_weights_rank_first(model, layer, head):
    trace = model.run(PROMPT).trace
    scored, score, weighed = by_hand(trace, layer, head)
    assert scored == weighed                              # under exp, independently seen
    found = try_answers.answer("top_key", trace, layer, head=head)
    tokens = trace.token_text
    assert (found.layer, found.head, found.panel) == (layer, head, "attention")
    assert f"scores key {scored} {tokens[scored]!r} highest" in found.text, found.text
    assert f"= {score:.3f}" in found.text and "most too" in found.text, found.text


def test_under_the_linear_kernel_the_answer_names_the_key_a_weighs_most(model):
    trace = model.run(PROMPT, kernel="linear", kernel_layers=[1]).trace
    for head in range(trace.model.n_heads):
        scored, _score, weighed = by_hand(trace, 1, head)
        found = try_answers.answer("top_key", trace, 1, head=head)
        if scored != weighed:
            assert f"key {weighed} {trace.token_text[weighed]!r} most" in found.text, found.text
            assert "not exp" in found.text
        else:
            assert "most too" in found.text
