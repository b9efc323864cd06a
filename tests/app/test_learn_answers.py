"""The Learn path's "Show the answer" links: the question "which head copies the previous token?" selects the
head whose rows put most weight on the token just before (checked against a loop over every row of every
head's attention), "which head of layer 2 attends mostly to the first token?" the head of that layer with the
largest first column, each bringing the Attention panel forward; a fact of the algebra is shown as written,
and the fact the decoding stop states (one new row and one new column per step, earlier rows unchanged) holds
in the window's own mask."""
from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import QUrl

from explorer.app.widgets.learn_tour import load_stops
from explorer.app.window.learn_placement import open_learn
from explorer.views import try_answers
from tests.app.shared_window import settle, window_with_tiny_model
from tests.app.synthetic_trace import build_trace


@pytest.fixture(scope="module")
def window(qapp, tmp_path_factory):
    dialogs = {}
    with window_with_tiny_model(qapp, tmp_path_factory.mktemp("app"), dialogs,
                                prompt="To be, or not to be, that is the question") as window:
        window.resize(1400, 900)
        yield window


def stop_index(stop_id: str) -> int:
    return next(i for i, stop in enumerate(load_stops()) if stop.id == stop_id)


def click_answer(qapp, window, stop_id: str, question: int):
    """Learn opened at `stop_id`, its question's "Show the answer" link followed."""
    panel = open_learn(window)
    panel.go_to(stop_index(stop_id))
    assert f'href="answer:{question}"' in panel.text.toHtml()
    panel.text.anchorClicked.emit(QUrl(f"answer:{question}"))
    qapp.processEvents()
    return panel


def loop_previous_token(trace) -> np.ndarray:
    """(L, N_Q): the mean over rows i ≥ 1 of A[i, i-1], row by row from each layer's weights."""
    shares = np.zeros((trace.model.n_layers, trace.model.n_heads))
    for layer in range(trace.model.n_layers):
        weights = trace.attention(layer)
        for head in range(trace.model.n_heads):
            rows = [weights[head, i, i - 1] for i in range(1, weights.shape[1])]
            shares[layer, head] = sum(rows) / len(rows)
    return shares


def test_the_previous_token_head_is_the_one_a_loop_over_the_rows_finds(qapp, window):
    panel = click_answer(qapp, window, "qkv", 1)
    shares = loop_previous_token(window.session.trace)
    layer, head = np.unravel_index(np.argmax(shares), shares.shape)
    selection = window.session.selection
    assert (selection.layer, selection.head) == (layer, head)
    assert panel.answer.startswith(f"Layer {layer}, head {head}: on average "
                                   f"{shares[layer, head]:.0%}"), panel.answer
    assert window.docks["attention"].isVisible()


def test_the_first_token_head_of_the_layer_the_question_names(qapp, window):
    panel = click_answer(qapp, window, "heads", 0)
    trace = window.session.trace
    layer = min(2, trace.model.n_layers - 1)                  # the tiny model may have fewer layers
    weights = trace.attention(layer)
    first = [np.mean([weights[h, i, 0] for i in range(weights.shape[1])]) for h in range(trace.model.n_heads)]
    assert (window.session.selection.layer, window.session.selection.head) == (layer, int(np.argmax(first)))
    assert panel.answer.startswith(f"Layer {layer}, head {int(np.argmax(first))}:")


def test_the_decoding_stops_answer_holds_in_the_windows_mask(qapp, window):
    panel = click_answer(qapp, window, "decoding", 0)
    assert panel.answer.startswith("One new row and one new column.")
    before = window.session.trace.mask(0)
    steps = window.session.trace.n_steps
    window.controller.step()
    settle(qapp, lambda: window.session.trace.n_steps == steps + 1 and not window.worker.busy)
    after = window.session.trace.mask(0)
    assert after.shape == (before.shape[0] + 1, before.shape[1] + 1)
    assert np.array_equal(after[:-1, :-1], before) and not after[:-1, -1].any() and after[-1].all()


def test_answers_say_why_they_cannot_be_read():
    assert "Run a prompt first" in try_answers.answer("previous_token", None).text
    long = build_trace(n_layers=1, n_heads=2, prompt_len=try_answers.MAX_TOKENS + 1)
    refused = try_answers.answer("previous_token", long)
    assert refused.layer is None and f"has {try_answers.MAX_TOKENS + 1:,} tokens" in refused.text
    with pytest.raises(ValueError, match="unknown answer kind"):
        try_answers.answer("favourite_head", None)
    for stop in load_stops():                                  # every kind the path names is one answer() knows
        for question in stop.tries:
            assert question.answer in (None, *try_answers.KINDS), (stop.id, question)
            assert question.answer != "text" or question.text, (stop.id, question)


def test_on_a_synthetic_trace_the_answer_is_the_loops_argmax():
    trace = build_trace(n_layers=2, n_heads=4, prompt_len=6, steps=2)
    shares = loop_previous_token(trace)
    found = try_answers.previous_token_head(trace)
    assert (found.layer, found.head) == tuple(int(i) for i in np.unravel_index(np.argmax(shares), shares.shape))
