"""Long work says what it does: a prefill reports each layer and can be cancelled, a session opened from its file
runs and says so, and a prompt over the memory budget offers float16 and a larger budget (No is never silent)."""
from __future__ import annotations

import numpy as np
import pytest
import transformers  # noqa: E402,F401  (the tiny model is written with it; missing, the run fails, never skips)
from PySide6.QtWidgets import QPushButton

from explorer.app.run import budget_dialog
from explorer.app.run.trace_budget import TraceCost
from explorer.app.state.freshness import EDITED
from explorer.app.state.session_file import SessionState
from explorer.app.thread.requests import Prefill
from tests.app.test_budget import LONG_PROMPT
from tests.app.window_helpers import PROMPT, idle, opened, step

pytestmark = pytest.mark.usefixtures("store_home")  # the store in the test's folder


@pytest.fixture
def over_budget(qtbot, window, tiny, monkeypatch):
    """The window with LONG_PROMPT typed under a budget it passes; answers[0] is the choice to make."""
    first = opened(qtbot, window, tiny)
    window.prompt.set_text(LONG_PROMPT)
    n = len(window.session.tokens.ids)
    window.controller.set_trace_budget(int(TraceCost.measured(first).prefill_bytes(n - 1)) + 10)
    asked, answers = [], [None]

    def choose(parent, title, text, offered):
        asked.append((text, offered))
        return next((c for c in offered if c.key == answers[0]), None)

    monkeypatch.setattr(budget_dialog, "choose", choose)
    notices = []
    window.controller.notice.connect(notices.append)
    return window, first, n, asked, answers, notices


def test_cancel_on_the_budget_question_says_the_prompt_was_not_run(qtbot, over_budget):
    window, first, n, asked, answers, notices = over_budget
    window.actions.run.trigger()
    assert idle(qtbot, window) is first
    text, offered = asked[-1]
    assert [c.key for c in offered] == ["keep", "float16", "raise"]
    assert "float16" in text and "larger budget" in text
    assert any("The prompt was not run" in notice and f"{n:,} tokens" in notice for notice in notices)


def test_float16_from_the_budget_question_runs_the_whole_prompt(qtbot, over_budget):
    window, first, n, asked, answers, _ = over_budget
    answers[0] = "float16"
    window.actions.run.trigger()
    trace = idle(qtbot, window, lambda: window.session.trace.n_tokens == n)
    assert trace.steps[0].layers[0].attn.q.dtype == np.float16
    assert window.menus.half_trace.isChecked() and window.settings.record_dtype == "float16"


def test_a_larger_budget_from_the_question_runs_the_whole_prompt_and_is_kept(qtbot, over_budget):
    window, first, n, asked, answers, _ = over_budget
    answers[0] = "raise"
    window.actions.run.trigger()
    trace = idle(qtbot, window, lambda: window.session.trace.n_tokens == n)
    raised = next(c for c in asked[-1][1] if c.key == "raise").budget
    assert window.controller.trace_budget == raised >= TraceCost.measured(trace).held
    assert int(window.settings.q.value("decode/trace_budget_mb")) == raised // 10 ** 6     # kept for the next run


def test_a_prefill_reports_every_layer(qtbot, window, tiny):
    reports = []
    window.worker.run_progress.connect(lambda fraction, text: reports.append((fraction, text)))
    trace = opened(qtbot, window, tiny)
    n_layers = trace.model.n_layers
    qtbot.waitUntil(lambda: len(reports) >= n_layers, timeout=10000)
    assert [f for f, _ in reports[-n_layers:]] == [(i + 1) / n_layers for i in range(n_layers)]
    assert reports[-1][1] == f"Prefilling {trace.n_tokens:,} tokens: layer {n_layers} of {n_layers}"


def test_a_cancelled_prefill_leaves_nothing_half_done(qtbot, window, tiny, monkeypatch):
    opened(qtbot, window, tiny)
    step(qtbot, window)
    queue = window.worker._loop._queue
    monkeypatch.setattr(queue, "is_cancelled", lambda request: isinstance(request, Prefill))   # Cancel at layer 1
    notices = []
    window.controller.notice.connect(notices.append)
    before = window.session.trace
    window.prompt.set_text(PROMPT + " that is")
    window.actions.run.trigger()
    idle(qtbot, window, lambda: any("cancelled" in notice for notice in notices))
    assert window.session.trace is before and window.session.out_of_date == EDITED   # the trace before, said old
    held = window.worker._loop._state.decoder.trace                   # nothing of the new prompt half done
    assert held is None or held.token_ids.tolist() == before.token_ids[:held.n_tokens].tolist()
    monkeypatch.undo()
    window.actions.step.trigger()                                    # Step runs the edited prompt from scratch
    trace = idle(qtbot, window, lambda: window.session.trace is not before and window.session.trace is not None)
    assert trace.token_ids.tolist()[:len(window.session.tokens.ids)] == window.session.tokens.ids.tolist()


def test_the_progress_dialog_follows_the_layers_and_cancel_cancels(qtbot, window, monkeypatch):
    progress = window.controller.run_progress
    cancelled = []
    monkeypatch.setattr(window.worker, "cancel", lambda *a, **k: cancelled.append(True))
    progress._on_progress(0.5, "Prefilling 1,950 tokens: layer 15 of 30")
    assert progress.dialog.labelText() == "Prefilling 1,950 tokens: layer 15 of 30"
    assert progress.dialog.value() == 500 and progress.dialog.maximum() == 1000
    progress.dialog.findChild(QPushButton).click()                  # the dialog's Cancel button
    assert cancelled and progress.dialog is None


def test_opening_a_session_runs_it_and_says_so(qtbot, window, tiny):
    first = opened(qtbot, window, tiny)
    trace = step(qtbot, window, 2)
    state = SessionState.of(str(tiny), PROMPT, window.sampling_bar.settings(), trace)
    window.actions.reset.trigger()
    idle(qtbot, window)
    notices = []
    window.controller.notice.connect(notices.append)
    window.restore_session(state)
    again = idle(qtbot, window, lambda: window.session.trace is not None)
    assert again.token_ids.tolist() == trace.token_ids.tolist() and again.n_steps == 3
    assert any(f"Opening the session: running its {first.n_tokens} prompt tokens and 2 steps" in n for n in notices)


def test_a_session_saved_before_it_ran_runs_its_prompt(qtbot, window, tiny):
    opened(qtbot, window, tiny)
    window.actions.reset.trigger()
    idle(qtbot, window)
    window.restore_session(SessionState(model=str(tiny), prompt=PROMPT))
    trace = idle(qtbot, window, lambda: window.session.trace is not None)
    assert trace.token_ids.tolist() == window.session.tokens.ids.tolist()


def test_opening_another_model_says_nothing_about_a_cancelled_run(qtbot, window, tiny, tmp_path):
    from tests.app.tiny_model import make_tiny_llama

    opened(qtbot, window, tiny)
    notices = []
    window.controller.notice.connect(notices.append)
    opened(qtbot, window, make_tiny_llama(tmp_path / "other", seed=2))
    assert not any("cancelled" in notice for notice in notices), notices
