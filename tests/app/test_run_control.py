"""What a press does, as a person sees it: Run right after typing runs the text typed, a cancelled run
keeps the trace it would have replaced (out of date when it ran another prompt), a long prompt is not run
unasked when a model opens, and the prefill's progress dialog closes when its trace arrives, whatever else
the model thread has to do."""
from __future__ import annotations

import dataclasses
import json
import threading

import pytest
import transformers  # noqa: E402,F401  (the tiny model is written with it; missing, the run fails, never skips)
from PySide6.QtCore import Qt

from explorer.app.run.controller import AUTO_RUN_TOKENS
from explorer.app.state.freshness import EDITED
from tests.app.tiny_model import CORPUS, make_tiny_llama
from tests.app.window_helpers import PROMPT, idle, opened, step

pytestmark = pytest.mark.usefixtures("store_home")  # the store in the test's folder


def test_run_pressed_right_after_typing_runs_the_text_in_the_editor(qtbot, window, tiny):
    opened(qtbot, window, tiny)
    window.prompt.setFocus()
    window.prompt.moveCursor(window.prompt.textCursor().MoveOperation.End)
    qtbot.keyClicks(window.prompt, " to be")
    window.actions.run.trigger()                              # at once: the debounce has not fired yet
    expected = window.controller.summary.tokenizer.encode(PROMPT + " to be").ids.tolist()
    trace = idle(qtbot, window, lambda: window.session.trace.n_tokens == len(expected))
    assert trace.token_ids.tolist() == expected
    assert window.session.out_of_date is None


def test_step_pressed_right_after_typing_runs_the_text_in_the_editor(qtbot, window, tiny):
    opened(qtbot, window, tiny)
    window.prompt.moveCursor(window.prompt.textCursor().MoveOperation.End)
    qtbot.keyClicks(window.prompt, ", that")
    window.actions.step.trigger()                             # a new prompt: Step prefills it first
    expected = window.controller.summary.tokenizer.encode(PROMPT + ", that").ids.tolist()
    trace = idle(qtbot, window, lambda: window.session.trace.n_tokens == len(expected))
    assert trace.token_ids.tolist() == expected


def cancel_at_the_first_layer(window) -> list:
    """Cancel the next prefill from the model thread itself as its first layer is reported: the run is then
    cancelled half way, deterministically, however fast the model."""
    seen = []

    def on_layer(_fraction, _text) -> None:
        if not seen:
            seen.append(True)
            window.worker._queue.cancel()
    window.worker._emitter.run_progress.connect(on_layer, Qt.ConnectionType.DirectConnection)
    return seen


def test_cancelling_a_rerun_of_the_same_prompt_keeps_the_trace_and_steps_on_from_it(qtbot, window, tiny):
    opened(qtbot, window, tiny)
    before = step(qtbot, window, 2)
    seen = cancel_at_the_first_layer(window)
    notices = []
    window.controller.notice.connect(notices.append)
    window.actions.run.trigger()
    idle(qtbot, window, lambda: bool(seen) and any("cancelled" in n for n in notices))
    assert window.session.trace is before
    attention = window.docks["attention"].widget()
    assert attention.drawn().kind == "trace" and attention.drawn().trace_id == window.session.trace_id
    after = step(qtbot, window)                               # the decoder holds the kept trace again
    assert after.n_steps == before.n_steps + 1
    assert after.token_ids[:before.n_tokens].tolist() == before.token_ids.tolist()
    assert after.steps[-1].token_ids.tolist() == [before.steps[-1].chosen_id]


def test_a_run_after_a_cancelled_one_ends_the_cancel_s_notice(qtbot, window, tiny):
    """Run, Stop, Run: the status bar said "Run cancelled: the previous run is kept." for 5.6 s beside the new
    run's trace (drive33). A press's run says it runs, and what the bar says then is of that run."""
    opened(qtbot, window, tiny)
    before = step(qtbot, window, 2)
    seen = cancel_at_the_first_layer(window)
    window.actions.run.trigger()
    idle(qtbot, window, lambda: bool(seen) and "cancelled" in window.status.currentMessage())
    notices = []
    window.controller.notice.connect(notices.append)
    window.actions.run.trigger()                              # pressed again: this run goes through (seen)
    after = idle(qtbot, window, lambda: window.session.trace is not before and window.session.trace.n_steps == 1)
    assert after.n_tokens == len(window.controller.summary.tokenizer.encode(PROMPT).ids)
    message = window.status.currentMessage()
    assert "cancelled" not in message and "kept" not in message, message
    assert any(notice.startswith("Running") for notice in notices), notices
    qtbot.waitUntil(lambda: not window.status.currentMessage(), timeout=5000)     # said while it ran, not after


def test_cancelling_another_prompt_s_run_keeps_the_trace_before_marked_out_of_date(qtbot, window, tiny):
    before = opened(qtbot, window, tiny)
    window.prompt.set_text("Whether 'tis nobler")
    seen = cancel_at_the_first_layer(window)
    notices = []
    window.controller.notice.connect(notices.append)
    window.actions.run.trigger()
    idle(qtbot, window, lambda: bool(seen) and any("cancelled" in n for n in notices))
    assert window.session.trace is before and window.session.out_of_date == EDITED
    kind, why = window.docks["attention"].widget().view_state()
    assert kind == "out of date" and "Run" in why
    window.prompt.set_text(PROMPT)                            # back to the kept trace's prompt: Step continues it
    after = step(qtbot, window)
    assert after.n_steps == before.n_steps + 1
    assert after.token_ids[:before.n_tokens].tolist() == before.token_ids.tolist()


def test_cancelling_the_first_run_shows_nothing_and_says_so(qtbot, window, tiny):
    opened(qtbot, window, tiny)
    window.actions.reset.trigger()
    idle(qtbot, window, lambda: window.session.trace is None)
    seen = cancel_at_the_first_layer(window)
    window.actions.run.trigger()
    idle(qtbot, window, lambda: bool(seen))
    assert window.session.trace is None
    kind, why = window.docks["attention"].widget().view_state()
    assert kind == "empty" and "Run" in why


def test_a_long_prompt_is_not_run_unasked_when_a_model_opens(qtbot, window, tmp_path, dialogs):
    wide = make_tiny_llama(tmp_path / "wide-llama")            # the tiny Llama, with room for 2,048 positions
    config = json.loads((wide / "config.json").read_text())
    (wide / "config.json").write_text(json.dumps(dict(config, max_position_embeddings=2048)))
    long_text = " ".join(CORPUS * 4)
    window.prompt.set_text(long_text)
    window.open_model(str(wide))
    idle(qtbot, window, lambda: window.controller.summary is not None)
    n = len(window.session.tokens.ids)
    assert n > AUTO_RUN_TOKENS
    assert window.session.trace is None and dialogs["questions"] == []       # no run, and nothing asked
    assert window.prompt.text == long_text                                   # the text stays for Run
    attention = window.docks["attention"].widget()
    kind, why = attention.view_state()
    assert kind == "empty" and f"{n:,} tokens" in why and "press Run" in why and attention.note.text() == why
    window.prompt.set_text(PROMPT)                                           # a short one runs as usual
    window.actions.run.trigger()
    assert idle(qtbot, window, lambda: window.session.trace is not None).n_tokens == len(
        window.session.tokens.ids)


def test_the_prefill_dialog_closes_when_its_trace_arrives_while_other_jobs_run(qtbot, window, tiny):
    opened(qtbot, window, tiny)
    progress = window.controller.run_progress
    texts = []
    window.worker.run_progress.connect(lambda _fraction, text: texts.append(text))
    release = threading.Event()
    window.prompt.set_text("To")
    window.actions.run.trigger()
    window.session.requests.model_job_requested.emit(lambda loaded, cancelled: release.wait(30))   # a panel's long job
    try:
        qtbot.waitUntil(lambda: window.session.trace is not None and window.session.trace.n_tokens == 1
                        and bool(texts), timeout=30000)
        assert window.worker.busy and progress.dialog is None
    finally:
        release.set()
    idle(qtbot, window)
    assert texts[0].startswith("Prefilling 1 token: layer 1 of ")          # one token, not "1 tokens"


def test_opening_a_session_reports_the_session_s_run_only(qtbot, window, tiny):
    from explorer.views.session_state import SessionState

    opened(qtbot, window, tiny)
    saved = step(qtbot, window, 2)
    state = dataclasses.replace(SessionState.of(str(tiny), PROMPT, window.sampling_bar.settings(), saved),
                                record_dtype="float16")
    window.prompt.set_text("Whether 'tis nobler")
    window.actions.run.trigger()
    idle(qtbot, window, lambda: window.session.trace.n_steps == 1)           # another run on screen
    texts = []
    window.worker.run_progress.connect(lambda _fraction, text: texts.append(text))
    window.restore_session(state)                  # float16: the old trace is not redone before the replay
    again = idle(qtbot, window, lambda: window.session.trace.n_steps == 3)
    assert again.token_ids.tolist() == saved.token_ids.tolist()
    # The session's replay says its 2 decoded tokens. Only the session's texts are judged: no give-back of the
    # trace shown ("Replaying the prompt's 11 tokens") should run before it (test_give_back_owed holds that).
    session_texts = [text for text in texts if "before decoding" in text]
    assert session_texts and all("decoding 2 tokens" in text for text in session_texts), texts
    assert not any("1 tokens" in text or "0 steps" in text for text in texts), texts
