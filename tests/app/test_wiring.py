"""The wiring between the window, the worker and the panels, through the real core on a tiny Llama.

Each test follows one path a person takes: a loaded model's tokenizer names the
ids in the panels, the logit-lens button is answered by the engine on the worker
thread, and Ctrl+E exports the panel that holds the focus, or the one last in focus.
"""
from __future__ import annotations

import numpy as np
import pytest
import transformers  # noqa: E402,F401  (the tiny model is written with it; missing, the run fails, never skips)
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFileDialog

from tests.app.window_helpers import PROMPT, idle, new_window, opened, step

pytestmark = pytest.mark.usefixtures("store_home")  # the store in the test's folder


@pytest.fixture
def window(qtbot, tmp_path, dialogs):
    window = new_window(qtbot, tmp_path)
    yield window
    window.close()


def test_a_loaded_model_names_vocabulary_ids_in_the_panels(qtbot, window, tiny):
    trace = opened(qtbot, window, tiny)
    tokenizer = window.controller.summary.tokenizer
    for token_id in (0, 5, 17, int(trace.steps[-1].chosen_id)):
        assert window.session.display_token(token_id) == tokenizer.display(token_id)
    table = window.docks["next_token"].widget().table
    top_id = int(trace.steps[-1].top_ids[-1][0])
    assert table.item(0, 2).text() == str(top_id)
    assert table.item(0, 1).text() == tokenizer.display(top_id) != f"#{top_id}"


def test_the_logit_lens_button_is_answered_by_the_engine(qtbot, window, tiny):
    opened(qtbot, window, tiny)
    trace = step(qtbot, window, 2)
    panel = window.docks["next_token"].widget()
    with qtbot.waitSignal(window.session.requests.candidates_ready, timeout=60000):   # a prompt position: on demand
        window.session.select(token=2)
    assert trace.candidates(2) is None and len(panel.candidates) == 10
    with qtbot.waitSignal(window.session.requests.logit_lens_ready, timeout=60000) as answer:
        panel.lens_button.click()
    lens = answer.args[0]
    assert lens["position"] == 2
    assert lens["ids"].shape == lens["probs"].shape == (trace.model.n_layers, 5)
    # The last layer's lens is the model's own output at that position: its top token is the panel's rank 1.
    assert int(lens["ids"][-1, 0]) == int(panel.candidates[0])
    assert panel.table.item(0, 2).text() == str(int(panel.candidates[0]))
    assert panel.lens_table.isVisibleTo(panel) and panel.lens_table.rowCount() == trace.model.n_layers
    assert window.session.display_token(int(lens["ids"][0, 0])) in panel.lens_table.item(0, 1).text()


def test_the_logit_lens_of_a_position_outside_the_trace_is_one_sentence(qtbot, window, tiny, dialogs):
    trace = opened(qtbot, window, tiny)
    window.session.requests.logit_lens_requested.emit(trace.n_tokens + 5)
    qtbot.waitUntil(lambda: bool(dialogs["warnings"]), timeout=60000)
    assert f"position {trace.n_tokens + 5} is not in the trace" in dialogs["warnings"][0]


@pytest.fixture
def save_dialogs(monkeypatch):
    """The titles of the save dialogs opened; each is cancelled, so nothing is written."""
    titles = []

    def cancelled(parent, title, *args, **kwargs):
        titles.append(title)
        return "", ""

    monkeypatch.setattr(QFileDialog, "getSaveFileName", cancelled)
    return titles


@pytest.mark.parametrize("panel, title", [("tokens", "Export Tokens"), ("attention", "Export attention"),
                                          ("mask", "Export Mask")])
def test_ctrl_e_runs_the_first_export_action_of_the_focused_panel(qtbot, window, tiny, save_dialogs, panel, title):
    opened(qtbot, window, tiny)
    dock = window.docks[panel]
    dock.show()
    dock.raise_()
    widget = dock.widget()
    qtbot.waitUntil(widget.isVisible, timeout=5000)
    widget.setFocus()
    qtbot.keyClick(widget, Qt.Key.Key_E, Qt.KeyboardModifier.ControlModifier)
    assert save_dialogs == [title], f"Ctrl+E in the {panel} panel opened {save_dialogs}"


def test_ctrl_e_in_the_prompt_editor_exports_the_attention_map(qtbot, window, tiny, save_dialogs):
    opened(qtbot, window, tiny)
    window.prompt.setFocus()
    qtbot.keyClick(window.prompt, Qt.Key.Key_E, Qt.KeyboardModifier.ControlModifier)
    assert save_dialogs == ["Export attention"]
    assert window.prompt.text == PROMPT, "Ctrl+E typed nothing"


def test_ctrl_e_in_the_prompt_editor_exports_the_panel_the_person_was_last_in(qtbot, window, tiny, save_dialogs):
    """Qt Creator's current editor stays current while the focus is in a tool pane: the prompt is no figure, so
    Ctrl+E there exports the panel the person read last (it exported attention whatever that was), and attention
    again once that panel is closed."""
    opened(qtbot, window, tiny)
    tokens = window.docks["tokens"].widget()
    qtbot.waitUntil(tokens.isVisible, timeout=5000)
    tokens.setFocus()
    window.prompt.setFocus()
    qtbot.keyClick(window.prompt, Qt.Key.Key_E, Qt.KeyboardModifier.ControlModifier)
    assert save_dialogs == ["Export Tokens"]
    window.docks["tokens"].close()
    window.prompt.setFocus()
    qtbot.keyClick(window.prompt, Qt.Key.Key_E, Qt.KeyboardModifier.ControlModifier)
    assert save_dialogs == ["Export Tokens", "Export attention"]
    assert window.prompt.text == PROMPT, "Ctrl+E typed nothing"


def test_recording_in_float16_redoes_the_run_in_half_the_memory(qtbot, window, tiny):
    opened(qtbot, window, tiny)
    before = step(qtbot, window, 3)
    assert before.steps[-1].layers[0].attn.q.dtype == np.float32
    menu = window.menus.half_trace
    assert not menu.isChecked()
    menu.trigger()                                       # Decode ▸ Record the Trace in float16
    after = idle(qtbot, window, lambda: window.session.trace is not before)
    assert after.steps[-1].layers[0].attn.q.dtype == np.float16 and window.settings.record_dtype == "float16"
    assert after.token_ids.tolist() == before.token_ids.tolist() and after.n_steps == before.n_steps
    assert after.steps[-1].chosen_id == before.steps[-1].chosen_id
    assert after.nbytes() < 0.6 * before.nbytes()
    np.testing.assert_allclose(after.attention(1).astype(np.float32), before.attention(1), atol=1e-3)
    again = step(qtbot, window, 1)                       # and decoding goes on in float16
    assert again.n_steps == before.n_steps + 1 and again.steps[-1].layers[0].x.dtype == np.float16
