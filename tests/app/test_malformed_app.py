"""The malformed corpus (tests/malformed_corpus.py) opened through the window, one file after another.

Each must show its own one-sentence dialog naming the file, and leave the
previous model loaded, its trace shown and Step working; no pickle payload runs.
"""
from __future__ import annotations

import pytest
import transformers  # noqa: E402,F401  (the tiny model is written with it; missing, the run fails, never skips)

from tests.app.shared_window import window_with_tiny_model
from tests.malformed_corpus import CASE_IDS, CASES, MARKER, good_folder


@pytest.fixture(scope="module")
def dialogs():
    return {"warnings": [], "questions": []}


@pytest.fixture(scope="module")
def window(qapp, tmp_path_factory, dialogs):
    """One window for the whole corpus, with the tiny Llama open: every failure must leave it working."""
    with window_with_tiny_model(qapp, tmp_path_factory.mktemp("malformed-app"), dialogs) as window:
        yield window


def opened_badly(qtbot, window, dialogs, path) -> str:
    """Open `path` through the window; return the one dialog it caused."""
    seen = len(dialogs["warnings"])
    window.open_model(str(path))
    qtbot.waitUntil(lambda: len(dialogs["warnings"]) > seen, timeout=60000)
    qtbot.waitUntil(lambda: not window.worker.busy and window.controller.loading is None, timeout=60000)
    new = dialogs["warnings"][seen:]
    assert len(new) == 1, new
    return new[0]


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_each_malformed_file_shows_its_sentence_and_the_previous_model_keeps_working(qtbot, window, dialogs,
                                                                                      tmp_path, case):
    path = case.build(good_folder(tmp_path / "spoiled"), tmp_path)
    before = window.session.trace
    message = opened_badly(qtbot, window, dialogs, path)
    assert case.says in message
    assert "\n" not in message and message.endswith((".", ")")), message
    if case.names_file:
        assert path.name in message
    assert not (tmp_path / MARKER).exists(), "a pickle payload ran"
    assert window.controller.summary.name == "tiny-llama" and window.session.trace is before
    assert window.model_bar.models.currentData() == str(window.tiny)
    assert window.windowTitle().startswith("tiny-llama")
    window.actions.step.trigger()
    qtbot.waitUntil(lambda: window.session.trace.n_steps == before.n_steps + 1, timeout=60000)
    assert window.session.trace.model.name == "tiny-llama" and not dialogs["questions"]


def test_an_unsupported_architecture_names_its_folder(qtbot, window, dialogs, tmp_path):
    case = next(c for c in CASES if c.name == "unsupported architecture")
    path = case.build(good_folder(tmp_path / "mamba-model"), tmp_path)
    assert "mamba-model" in opened_badly(qtbot, window, dialogs, path)


def test_a_forward_pass_that_gives_nan_shows_one_dialog_and_keeps_the_model(qtbot, window, dialogs, tmp_path):
    """A model that loads (finite weights) but whose logits overflow: the run's error reaches the one
    dialog, the model thread stays alive with the model loaded, and the next run can still be asked for."""
    from tests.core.test_model_file_boundary import overflowing

    path = overflowing(good_folder(tmp_path / "overflowing"))
    seen = len(dialogs["warnings"])
    window.open_model(str(path))
    qtbot.waitUntil(lambda: len(dialogs["warnings"]) > seen, timeout=60000)
    qtbot.waitUntil(lambda: not window.worker.busy and window.controller.loading is None, timeout=60000)
    new = dialogs["warnings"][seen:]
    assert len(new) == 1 and "NaN or infinite logits" in new[0] and "\n" not in new[0], new
    assert window.controller.summary.name == "overflowing" and window.worker._thread.is_alive()
    window.open_model(str(window.tiny))                          # the model thread still takes work
    qtbot.waitUntil(lambda: window.controller.summary.name == "tiny-llama" and window.session.trace is not None
                    and window.session.trace.model.name == "tiny-llama", timeout=60000)
    qtbot.waitUntil(lambda: not window.worker.busy, timeout=60000)
    before = window.session.trace
    window.actions.step.trigger()
    qtbot.waitUntil(lambda: window.session.trace.n_steps == before.n_steps + 1, timeout=60000)
