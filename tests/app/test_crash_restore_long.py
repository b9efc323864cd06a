"""A relaunch after a crash need not re-run a long session (issue 22, item 18): the question offers to restore it
without running (its model, prompt and experiments back, the panels saying that Run runs it), and its prompt is
kept whatever the answer: declined, it is the last prompt, which the start puts in the editor."""
from __future__ import annotations

import json

import pytest
import transformers  # noqa: F401  (the tiny model is written with it; missing, the run fails, never skips)
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication, QMessageBox
from tokenizers import Tokenizer

from explorer.app.start.launch import first_prompt
from explorer.app.state import session_file
from tests.app.tiny_model import CORPUS, make_tiny_llama
from tests.app.window_helpers import PROMPT, idle

pytestmark = pytest.mark.usefixtures("store_home")    # the store in the test's folder
LONG_TEXT = " ".join(CORPUS * 4)


@pytest.fixture(scope="module")
def wide(tmp_path_factory):
    """The tiny Llama with room for 2,048 positions, so a prompt of some hundred tokens fits."""
    folder = make_tiny_llama(tmp_path_factory.mktemp("models") / "wide-llama")
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps(dict(config, max_position_embeddings=2048)))
    return folder


def crashed(tmp_path, folder, text: str, steps: int = 3) -> session_file.SessionState:
    """A dead run's autosave beside the window's own: `text` run and `steps` - 1 tokens decoded."""
    ids = tuple(Tokenizer.from_file(str(folder / "tokenizer.json")).encode(text).ids)
    state = session_file.SessionState(model=str(folder), prompt=text, steps=steps, prompt_ids=ids)
    (tmp_path / "autosave.json").write_text(json.dumps({**json.loads(state.to_json()), "pid": 2 ** 22 + 4321}))
    return state


def answer_with(button: str, seen: list, tries: int = 100) -> None:
    """Click `button` of the next modal message box (none comes: nothing is clicked)."""
    box = QApplication.activeModalWidget()
    if isinstance(box, QMessageBox):
        seen.append(box.text() + " " + box.informativeText())
        next(b for b in box.buttons() if b.text().replace("&", "") == button).click()
    elif tries:
        QTimer.singleShot(20, lambda: answer_with(button, seen, tries - 1))


def test_a_long_crashed_session_is_restored_without_running_when_asked(qtbot, window, wide, tmp_path, dialogs):
    state = crashed(tmp_path, wide, LONG_TEXT)
    assert len(state.prompt_ids) > 600                          # minutes of work for a real model on a CPU
    seen = []
    QTimer.singleShot(0, lambda: answer_with("Restore Without Running", seen))
    assert window.offer_crash_restore()
    idle(qtbot, window, lambda: window.controller.summary is not None)
    assert seen and "did not close cleanly" in seen[0] and f"{len(state.prompt_ids) + 2:,} tokens" in seen[0]
    assert window.controller.reference == str(wide) and window.prompt.text == LONG_TEXT
    assert window.session.trace is None                         # nothing run, nothing replayed
    kind, why = window.docks["attention"].widget().view_state()
    assert kind == "empty" and "press Run" in why and f"{len(state.prompt_ids):,} prompt tokens" in why, why
    window.actions.run.trigger()                                # Run runs it when the person chooses
    trace = idle(qtbot, window, lambda: window.session.trace is not None)
    assert trace.token_ids.tolist() == list(state.prompt_ids)


def test_a_declined_crashed_session_keeps_its_prompt_for_the_next_start(qtbot, window, wide, tmp_path, dialogs):
    crashed(tmp_path, wide, LONG_TEXT)
    window.settings.last_prompt = PROMPT                        # the prompt of the last clean quit, older
    seen = []
    QTimer.singleShot(0, lambda: answer_with("Don't Restore", seen))
    assert not window.offer_crash_restore() and seen
    assert window.controller.loading is None and window.controller.reference is None
    assert first_prompt(window.settings.last_prompt, str(wide)) == LONG_TEXT


def test_a_short_crashed_session_declined_keeps_its_prompt_too(qtbot, window, tiny, tmp_path, dialogs):
    crashed(tmp_path, tiny, "Or to take arms")
    dialogs["answer"] = QMessageBox.StandardButton.No           # the Yes or No question of a quick replay
    assert not window.offer_crash_restore()
    assert "did not close cleanly" in dialogs["questions"][0]
    assert window.settings.last_prompt == "Or to take arms"


def test_a_long_prompt_that_crashed_before_its_run_ended_is_not_run_again_unasked(qtbot, window, wide, tmp_path,
                                                                                   dialogs):
    state = crashed(tmp_path, wide, LONG_TEXT, steps=0)
    state = session_file.SessionState(model=state.model, prompt=state.prompt)     # autosaved before a trace came
    (tmp_path / "autosave.json").write_text(json.dumps({**json.loads(state.to_json()), "pid": 2 ** 22 + 4321}))
    assert window.offer_crash_restore()                          # Yes: the quick question, nothing to replay
    idle(qtbot, window, lambda: window.controller.summary is not None)
    assert window.session.trace is None and window.prompt.text == LONG_TEXT
    kind, why = window.docks["attention"].widget().view_state()
    assert kind == "empty" and "press Run" in why, why


def test_a_run_that_died_before_it_had_a_model_or_prompt_is_not_offered(qtbot, window, tmp_path, dialogs):
    """A launch killed while its own first question was open left an autosave of nothing, and the next start
    asked "Restore its session (no model, a 0-character prompt)?" (drive26). Expectation: no question, the file
    gone, nothing opened."""
    empty = session_file.SessionState()
    path = tmp_path / "autosave.json"
    path.write_text(json.dumps({**json.loads(empty.to_json()), "pid": 2 ** 22 + 4321}))
    assert not window.offer_crash_restore()
    assert not dialogs["questions"] and not path.exists()
    assert window.controller.loading is None and window.controller.reference is None
