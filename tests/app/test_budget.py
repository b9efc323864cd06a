"""The trace memory budget: the byte model against real traces, the menu, and the questions it asks.

Nothing is ever cut without a Yes: each question is answered No first and the
trace must stay as it was, then Yes and the trace must be the shortened one.
"""
from __future__ import annotations

import pytest
import torch  # noqa: E402, F401  (missing, the run fails, never skips)
from PySide6.QtWidgets import QInputDialog, QMessageBox

from explorer.app.run.trace_budget import DEFAULT_BUDGET, TraceCost, TraceMeter
from tests.app.tiny_model import make_tiny_llama
from tests.app.window_helpers import PROMPT, idle, new_window, opened, step

pytestmark = pytest.mark.usefixtures("store_home")  # the store in the test's folder

LONG_PROMPT = "To be, or not to be, that is the question: Whether 'tis nobler"
NO, YES = QMessageBox.StandardButton.No, QMessageBox.StandardButton.Yes


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return make_tiny_llama(tmp_path_factory.mktemp("models") / "tiny-llama")


@pytest.fixture(scope="module")
def decoder(tiny):
    from explorer.core.decode import Decoder
    from explorer.core.runtime import load_model

    return Decoder(load_model(tiny))


@pytest.fixture
def window(qtbot, tmp_path, dialogs):
    window = new_window(qtbot, tmp_path)
    yield window
    window.close()


def test_the_byte_model_predicts_real_traces(decoder):
    ids = decoder.loaded.tokenizer.encode(LONG_PROMPT).ids
    prefilled = decoder.prefill(ids)
    measured = TraceCost.measured(prefilled)
    assert measured.held == prefilled.nbytes() and measured.prefill_bytes(len(ids)) == prefilled.nbytes()
    estimated = TraceCost.estimated(prefilled.model)
    assert estimated.prefill_bytes(len(ids)) == pytest.approx(prefilled.nbytes(), rel=0.05)
    for _ in range(10):
        grown = decoder.step()
    assert measured.held + measured.growth(len(ids), 10) == pytest.approx(grown.nbytes(), rel=0.05)
    after = TraceCost.measured(grown)
    assert after.held + after.growth(grown.n_tokens, 1) >= decoder.step().nbytes() * 0.999
    shorter = decoder.prefill(ids[-12:])
    assert after.prefill_bytes(12) == pytest.approx(shorter.nbytes(), rel=0.2)
    assert after.prefill_bytes(12) >= shorter.nbytes(), "the prefill estimate errs on the safe side"


def test_the_longest_prompt_that_fits_is_exact_and_a_meter_counts_shared_steps_once(decoder):
    cost = TraceCost(per_token=1000.0, per_pair=34.0)
    for budget in (999, 1000, 50_000, 10 ** 9):
        n = cost.max_prompt_tokens(budget)
        assert cost.prefill_bytes(n) <= budget < cost.prefill_bytes(n + 1)
    trace = decoder.prefill(decoder.loaded.tokenizer.encode(PROMPT).ids)
    meter = TraceMeter()
    assert meter.count(trace)[0] == trace.nbytes()
    longer = decoder.step()
    assert meter.count(longer)[0] == longer.nbytes() and len(meter._known) == 2


def test_the_budget_is_a_setting_changed_from_the_decode_menu(qtbot, window, tmp_path, monkeypatch):
    assert window.settings.trace_budget == DEFAULT_BUDGET == window.controller.trace_budget
    asked = []
    monkeypatch.setattr(QInputDialog, "getInt", lambda *args: asked.append(args) or (250, True))
    action = next(a for a in window.menus.decode.actions() if a.text() == "Trace Memory &Budget…")
    action.trigger()
    assert asked[0][3] == DEFAULT_BUDGET // 10 ** 6 and "MB" in asked[0][2]
    assert window.settings.trace_budget == 250 * 10 ** 6 == window.controller.trace_budget
    window.close()
    again = new_window(qtbot, tmp_path)
    try:
        assert again.controller.trace_budget == 250 * 10 ** 6
    finally:
        again.close()


@pytest.fixture
def budget_choices(monkeypatch, dialogs):
    """The over-budget question (explorer.app.run.budget_dialog.choose) answered like the others: Yes keeps."""
    from explorer.app.run import budget_dialog

    def choose(parent, title, text, offered):
        dialogs["questions"].append(text)
        return offered[0] if dialogs["answer"] == YES else None

    monkeypatch.setattr(budget_dialog, "choose", choose)


def test_a_prompt_over_the_budget_is_cut_only_when_agreed(qtbot, window, tiny, dialogs, budget_choices):
    first = opened(qtbot, window, tiny)
    cost = TraceCost.measured(first)
    window.prompt.set_text(LONG_PROMPT)
    n = len(window.session.tokens.ids)
    budget = int(cost.prefill_bytes(n - 1)) + 10
    keep = cost.max_prompt_tokens(budget / 2)           # half the budget: room is left to decode
    assert 5 < keep < n - 1 < 63
    window.controller.set_trace_budget(budget)
    dialogs["answer"] = NO
    window.actions.run.trigger()
    assert idle(qtbot, window) is first, "No leaves the trace as it was"
    question = dialogs["questions"][-1]
    assert "memory budget" in question and f"Keep only the last {keep} tokens?" in question
    dialogs["answer"] = YES
    window.actions.run.trigger()
    cut = idle(qtbot, window, lambda: window.session.trace is not first)
    assert cut.token_ids.tolist() == window.session.tokens.ids.tolist()[-keep:]
    assert cut.nbytes() <= budget / 2
    window.actions.step.trigger()                      # the cut prompt is the run: Step decodes, asks nothing
    assert idle(qtbot, window).n_steps == 2 and len(dialogs["questions"]) == 2
    assert not dialogs["warnings"]


def test_a_step_past_the_budget_asks_and_continues_from_a_shorter_context(qtbot, window, tiny, dialogs):
    opened(qtbot, window, tiny, LONG_PROMPT)
    before = step(qtbot, window, 2)
    cost = TraceCost.measured(before)
    window.controller.set_trace_budget(int(cost.held + cost.growth(before.n_tokens, 1)) - 1)
    dialogs["answer"] = NO
    window.actions.step.trigger()
    assert idle(qtbot, window) is before
    assert "One more step would take the trace to about" in dialogs["questions"][-1]
    dialogs["answer"] = YES
    window.actions.step.trigger()
    after = idle(qtbot, window, lambda: window.session.trace is not before)
    keep = after.n_tokens
    expected = before.token_ids.tolist() + [before.steps[-1].chosen_id]
    assert after.n_steps == 1 and after.token_ids.tolist() == expected[-keep:]
    assert f"Continue from the last {keep} tokens?" in dialogs["questions"][-1]
    assert after.nbytes() <= window.controller.trace_budget / 2
    assert not dialogs["warnings"]


def test_play_pauses_at_the_budget_without_a_dialog(qtbot, window, tiny, decoder, dialogs):
    first = opened(qtbot, window, tiny)
    decoder.prefill(first.token_ids)
    for _ in range(3):
        three = decoder.step()                          # the same model decodes the same tokens here
    assert three.token_ids[:first.n_tokens].tolist() == first.token_ids.tolist()
    window.controller.set_trace_budget(three.nbytes() + 1)
    window.decoding_bar.speed.setValue(30.0)
    window.actions.play.setChecked(True)
    qtbot.waitUntil(lambda: not window.controller.playing, timeout=60000)
    trace = idle(qtbot, window)
    assert trace.n_steps == 4 and trace.nbytes() <= window.controller.trace_budget
    assert not dialogs["questions"] and not dialogs["warnings"]
    assert "memory budget" in window.status.currentMessage()


def test_a_full_context_asks_before_going_on(qtbot, window, tiny, dialogs):
    first = opened(qtbot, window, tiny, LONG_PROMPT)
    full = step(qtbot, window, 64 - first.n_tokens)
    assert full.n_tokens == 64 and not dialogs["warnings"]
    dialogs["answer"] = NO
    window.actions.step.trigger()
    assert idle(qtbot, window) is full and "The context of tiny-llama is full" in dialogs["questions"][-1]
    dialogs["answer"] = YES
    window.actions.step.trigger()
    after = idle(qtbot, window, lambda: window.session.trace is not full)
    assert after.n_tokens == 32 and after.token_ids.tolist()[-1] == full.steps[-1].chosen_id
    assert not dialogs["warnings"]
