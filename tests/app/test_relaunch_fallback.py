"""A relaunch whose last model is refused now (its file damaged since) opens the default model once the error
is said; it left the window with no model at all (boundary27). A model named on the command line is not
replaced: its error is the answer."""
from __future__ import annotations

import json
import shutil

from explorer.app.start.launch import fall_back_if_refused
from tests.app.window_helpers import idle


def _damaged(tiny, tmp_path):
    folder = tmp_path / "damaged"
    shutil.copytree(tiny, folder)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "num_attention_heads": 0}))
    return folder


def test_a_refused_last_model_falls_back_to_the_default_after_its_error(qtbot, window, dialogs, tiny, tmp_path):
    damaged = _damaged(tiny, tmp_path)
    fall_back_if_refused(window, str(damaged), str(tiny))
    window.prompt.set_text("The quick brown fox")
    window.open_model(str(damaged))
    idle(qtbot, window, lambda: window.session.trace is not None)
    assert len(dialogs["warnings"]) == 1 and "num_attention_heads = 0 is not legal" in dialogs["warnings"][0]
    assert window.controller.summary.name == tiny.name and window.session.trace.n_steps == 1
    # once the warning is closed, the error line still says why another model is open (drive29: nothing did)
    line = window.status.error_line
    window.statusBar().clearMessage()                      # a notice hides it while it lasts (QStatusBar)
    assert line.isVisibleTo(window) and line.line.text().startswith("The model open last time could not be opened,")
    assert f"so {tiny.name} opened instead." in line.line.text() and "num_attention_heads = 0" in line.message
    window.open_model(str(damaged))                       # later failures are the person's own: no fallback
    idle(qtbot, window)
    assert len(dialogs["warnings"]) == 2 and window.controller.summary.name == tiny.name


def test_no_fallback_once_the_last_model_opened(qtbot, window, dialogs, tiny, tmp_path):
    damaged, other = _damaged(tiny, tmp_path), tmp_path / "other"
    shutil.copytree(tiny, other)
    fall_back_if_refused(window, str(damaged), str(other))
    window.open_model(str(tiny))
    idle(qtbot, window, lambda: window.controller.summary is not None)
    window.open_model(str(damaged))
    idle(qtbot, window)
    assert len(dialogs["warnings"]) == 1 and window.controller.summary.name == tiny.name


def test_a_refused_fallback_leaves_no_word_for_the_next_model(qtbot, window, dialogs, tiny, tmp_path):
    """The default refused too: the model the person opens next is theirs, not "opened instead" (session 29's read)."""
    damaged, fallback = _damaged(tiny, tmp_path), tmp_path / "fallback"
    shutil.copytree(damaged, fallback)
    fall_back_if_refused(window, str(damaged), str(fallback))
    window.open_model(str(damaged))
    idle(qtbot, window, lambda: len(dialogs["warnings"]) == 2)
    window.open_model(str(tiny))
    idle(qtbot, window, lambda: window.controller.summary is not None)
    assert window.controller.summary.name == tiny.name
    assert "opened instead" not in window.status.error_line.line.text()
