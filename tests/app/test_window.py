"""The whole window on a tiny random Llama opened through the real core, offscreen.

Dialogs are patched (QMessageBox) so a test sees what a person would be told.
"""
from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
import transformers  # noqa: E402,F401  (the tiny model is written with it; missing, the run fails, never skips)
from PySide6.QtCore import QSettings, Qt
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QApplication, QMessageBox

from explorer.app.state import session_file
from explorer.app.window import main_window
from explorer.app.window.main_window import MainWindow
from explorer.app.window.settings import AppSettings
from tests.app.tiny_model import break_weights
from tests.app.window_helpers import PROMPT, idle, new_window, opened, step

# the store (recent list, autosave) in the test's folder, never in ~/.cache (tests/app/conftest.py)
pytestmark = pytest.mark.usefixtures("store_home")


def test_opening_a_model_prefills_the_prompt_and_fills_the_status_bar(qtbot, window, tiny):
    trace = opened(qtbot, window, tiny)
    assert trace.n_steps == 1 and trace.steps[0].kind == "prefill"
    assert trace.token_ids.tolist() == window.controller.summary.tokenizer.encode(PROMPT).ids.tolist()
    fields = window.status.fields
    assert fields["model"].text() == "tiny-llama" and "GQA 4 Q → 2 KV" in fields["attention"].text()
    assert fields["step"].text().startswith("step 0") and "trace" in fields["memory"].text()


def test_typing_updates_the_token_table_ids(qtbot, window, tiny):
    opened(qtbot, window, tiny)
    window.prompt.setFocus()
    window.prompt.moveCursor(window.prompt.textCursor().MoveOperation.End)
    qtbot.keyClicks(window.prompt, " to be")
    expected = window.controller.summary.tokenizer.encode(PROMPT + " to be").ids.tolist()
    table = window.docks["tokens"].widget().table

    def table_ids():
        return [int(table.item(r, 2).text()) for r in range(table.rowCount())]

    qtbot.waitUntil(lambda: table_ids() == expected, timeout=5000)
    assert window.session.tokens.ids.tolist() == expected
    assert window.session.trace.n_steps == 1, "typing alone runs no model"


def test_three_steps_grow_the_trace_and_the_cache_by_three_tokens(qtbot, window, tiny):
    first = opened(qtbot, window, tiny)
    last = step(qtbot, window, 3)
    assert last.n_steps == 4 and last.n_tokens == first.n_tokens + 3
    per_token = (last.kv_bytes_in_use() - first.kv_bytes_in_use()) / 3
    assert np.all(per_token > 0) and np.allclose(per_token, first.kv_bytes_in_use() / first.n_tokens)
    assert window.status.fields["step"].text().startswith("step 3")


def test_back_restores_the_previous_state_exactly(qtbot, window, tiny):
    opened(qtbot, window, tiny)
    before = step(qtbot, window, 2)
    step(qtbot, window)
    window.actions.back.trigger()
    after = idle(qtbot, window, lambda: window.session.trace.n_steps == 3)
    assert after.token_ids.tolist() == before.token_ids.tolist()
    assert [s.chosen_id for s in after.steps] == [s.chosen_id for s in before.steps]
    for layer in range(after.model.n_layers):
        np.testing.assert_array_equal(after.attention(layer), before.attention(layer))
    np.testing.assert_array_equal(after.kv_bytes_in_use(), before.kv_bytes_in_use())
    again = step(qtbot, window)
    assert again.steps[-1].token_ids.tolist() == [before.steps[-1].chosen_id], "the cache forgot the undone token"


def test_forcing_a_candidate_changes_the_continuation(qtbot, window, tiny):
    greedy = opened(qtbot, window, tiny)
    greedy_next = step(qtbot, window, 2)
    window.actions.back.trigger()
    idle(qtbot, window, lambda: window.session.trace.n_steps == 2)
    window.actions.back.trigger()
    idle(qtbot, window, lambda: window.session.trace.n_steps == 1)
    candidates = [int(i) for i in greedy.steps[-1].top_ids[-1]]
    other = next(c for c in candidates if c != greedy.steps[-1].chosen_id)
    window.session.requests.force_requested.emit(other)            # what the next-token panel does on a click
    branched = idle(qtbot, window, lambda: window.session.trace.n_steps == 2)
    assert branched.steps[0].forced and branched.steps[0].chosen_id == other
    assert branched.steps[1].token_ids.tolist() == [other]
    assert branched.token_ids.tolist() != greedy_next.token_ids[:branched.n_tokens].tolist()


def test_a_broken_model_shows_an_error_and_leaves_the_previous_model_working(qtbot, window, tiny, tmp_path, dialogs):
    opened(qtbot, window, tiny)
    broken = break_weights(shutil.copytree(tiny, tmp_path / "broken-llama"))
    window.open_model(str(broken))
    qtbot.waitUntil(lambda: bool(dialogs["warnings"]), timeout=60000)
    idle(qtbot, window)
    assert len(dialogs["warnings"]) == 1 and "broken-llama" in dialogs["warnings"][0]
    assert window.controller.summary.name == "tiny-llama"
    assert window.model_bar.models.currentData() == str(tiny)
    trace = step(qtbot, window)
    assert trace.n_steps == 2 and trace.model.name == "tiny-llama"


def test_closing_the_window_while_playing_does_not_hang(qtbot, tmp_path, tiny, dialogs):
    window = new_window(qtbot, tmp_path)
    opened(qtbot, window, tiny)
    window.decoding_bar.speed.setValue(30.0)
    window.actions.play.setChecked(True)
    qtbot.waitUntil(lambda: window.session.trace.n_steps >= 3, timeout=60000)
    window.actions.step.trigger()                           # one more in flight as it closes
    window.close()
    assert not window.worker._thread.is_alive()
    assert not (tmp_path / "autosave.json").exists(), "a clean exit leaves no autosave"


def test_space_steps_outside_the_editor_and_types_inside_it(qtbot, window, tiny):
    opened(qtbot, window, tiny)
    window.docks["attention"].widget().setFocus()
    qtbot.keyClick(window.docks["attention"].widget(), Qt.Key.Key_Space)
    idle(qtbot, window, lambda: window.session.trace.n_steps == 2)
    window.prompt.setFocus()
    qtbot.keyClick(window.prompt, Qt.Key.Key_Space)
    assert window.prompt.text == " " + PROMPT
    idle(qtbot, window)
    assert window.session.trace.n_steps == 2


def test_space_steps_after_the_loading_dialog_has_closed(qtbot, window, tiny, monkeypatch):
    """With no window manager (a bare X screen, the offscreen platform) nobody gives the focus back when
    the loading dialog closes: the window's shortcuts were dead until a click (a slow CI load showed the
    dialog and Space stepped nothing)."""
    monkeypatch.setattr(main_window, "LOADING_SHOWN_AFTER_MS", 0)
    titles = []
    QGuiApplication.instance().focusWindowChanged.connect(lambda w: titles.append(w.title() if w else None))
    opened(qtbot, window, tiny)
    assert "Loading" in titles, f"the loading dialog never became the active window: {titles}"
    qtbot.waitUntil(lambda: QApplication.activeWindow() is window, timeout=5000)
    window.docks["attention"].widget().setFocus()
    qtbot.keyClick(window.docks["attention"].widget(), Qt.Key.Key_Space)
    idle(qtbot, window, lambda: window.session.trace.n_steps == 2)


def test_a_saved_session_reopens_to_the_same_trace(qtbot, window, tiny, tmp_path):
    opened(qtbot, window, tiny)
    step(qtbot, window)
    window.session.requests.force_requested.emit(7)
    original = idle(qtbot, window, lambda: window.session.trace.n_steps == 3)
    path = tmp_path / "saved.json"
    session_file.save(path, window.session_state())
    assert json.loads(path.read_text())["forced"] == [[1, 7]]
    other = new_window(qtbot, tmp_path, "other.ini")
    try:
        other.menus.open_session_file(str(path))
        reopened = idle(qtbot, other, lambda: other.session.trace is not None and other.session.trace.n_steps == 3)
        assert reopened.token_ids.tolist() == original.token_ids.tolist()
        assert [s.chosen_id for s in reopened.steps] == [s.chosen_id for s in original.steps]
        assert other.prompt.text == PROMPT
    finally:
        other.close()


def test_after_a_crash_the_next_start_offers_the_autosave(qtbot, window, tiny, tmp_path, dialogs):
    crashed = session_file.SessionState(model=str(tiny), prompt="Or to take arms", steps=3, forced=((0, 5),),
                                        prompt_ids=tuple(int(i) for i in _encode(tiny, "Or to take arms")))
    body = json.loads(crashed.to_json())
    (tmp_path / "autosave.json").write_text(json.dumps({**body, "pid": 2 ** 22 + 12345}))
    assert window.offer_crash_restore()
    trace = idle(qtbot, window, lambda: window.session.trace is not None and window.session.trace.n_steps == 3)
    assert "did not close cleanly" in dialogs["questions"][0]
    assert trace.steps[1].token_ids.tolist() == [5] and window.prompt.text == "Or to take arms"


def test_a_prompt_longer_than_the_context_is_truncated_only_when_agreed(qtbot, window, tiny, dialogs):
    opened(qtbot, window, tiny)
    long_prompt = "To be, or not to be, " * 20
    dialogs["answer"] = QMessageBox.StandardButton.No
    window.prompt.set_text(long_prompt)
    window.actions.run.trigger()
    idle(qtbot, window)
    assert "Keep only the last 63 tokens" in dialogs["questions"][-1]
    assert window.session.trace.n_tokens < 64 and window.session.trace.steps[0].n_new != 63
    dialogs["answer"] = QMessageBox.StandardButton.Yes
    window.actions.run.trigger()
    trace = idle(qtbot, window, lambda: window.session.trace.steps[0].n_new == 63)
    assert trace.token_ids.tolist() == window.session.tokens.ids.tolist()[-63:]


def test_settings_remember_recent_models_device_and_layout(qtbot, tmp_path, tiny, dialogs):
    window = new_window(qtbot, tmp_path)
    opened(qtbot, window, tiny)
    assert [window.model_bar.device.itemText(i) for i in range(window.model_bar.device.count())] == ["cpu"]
    window.docks["mask"].hide()
    window.close()
    again = new_window(qtbot, tmp_path)
    try:
        assert again.settings.recent_models() == [str(tiny)]
        assert again.settings.last_prompt == PROMPT
        assert again.docks["mask"].isHidden() and not again.docks["attention"].isHidden()
        assert [a.text() for a in again.menus.recent.actions()] == ["tiny-llama"]
    finally:
        again.close()


def test_a_model_opened_from_a_path_is_remembered_by_the_store(qtbot, window, tiny, store_home):
    from explorer.core import store

    opened(qtbot, window, tiny)
    assert store.recent_paths() == [tiny.resolve()]


def test_self_test_runs_three_steps_and_exports_an_image(qtbot, tiny, capsys):
    from argparse import Namespace

    from explorer.app.start.launch import launch
    from explorer.core import store

    assert launch(Namespace(self_test=True, model=str(tiny))) == 0
    assert "self-test passed: tiny-llama" in capsys.readouterr().out
    assert store.recent_paths() == []           # the user's recent list is not the self-test's


def test_self_test_fails_with_a_reason_on_a_broken_model(qtbot, tiny, tmp_path, capsys):
    from explorer.app.start.launch import self_test

    broken = break_weights(shutil.copytree(tiny, tmp_path / "broken"))
    assert self_test(str(broken)) == 1
    assert "self-test failed" in capsys.readouterr().err


def test_the_model_picker_greys_models_not_pulled_and_opens_the_chosen_one(qtbot, tmp_path, tiny, dialogs):
    from explorer.app.window.model_refs import ModelChoice

    choices = [ModelChoice("smollm2-135m  (pullable)", "smollm2-135m", reason="not pulled yet"),
               ModelChoice("tiny-llama  (bundled)", str(tiny))]
    window = MainWindow(settings=AppSettings(QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat)),
                        autosave_path=tmp_path / "autosave.json", catalog=lambda: choices)
    qtbot.addWidget(window)
    try:
        combo = window.model_bar.models
        qtbot.waitUntil(lambda: combo.findData(str(tiny)) == 1, timeout=10000)    # listed in the background
        assert not combo.model().item(0).isEnabled() and combo.model().item(1).isEnabled()
        window.prompt.set_text(PROMPT)
        combo.activated.emit(1)
        trace = idle(qtbot, window, lambda: window.session.trace is not None)
        assert trace.model.name == "tiny-llama"
        # The picker shows the loaded model once the catalog is listed again after the load (in the background).
        qtbot.waitUntil(lambda: combo.currentIndex() == 1, timeout=10000)
    finally:
        window.close()


def _encode(folder, text):
    from explorer.core.runtime import load_model

    return load_model(folder).tokenizer.encode(text).ids
