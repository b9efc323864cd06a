"""The malformed corpus (tests/malformed_corpus.py) opened through the window, one file after another.

Each must show its own one-sentence dialog naming the file, and leave the
previous model loaded, its trace shown and Step working; no pickle payload runs.
"""
from __future__ import annotations

import time

import pytest
from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QMessageBox

from explorer.app.main_window import MainWindow
from explorer.app.settings import AppSettings
from tests.app.tiny_model import make_tiny_llama
from tests.malformed_corpus import CASE_IDS, CASES, MARKER, good_folder

pytest.importorskip("transformers")
PROMPT = "To be, or not"


@pytest.fixture(scope="module")
def dialogs():
    return {"warnings": [], "questions": []}


@pytest.fixture(scope="module")
def window(qapp, tmp_path_factory, dialogs):
    """One window for the whole corpus, with the tiny Llama open: every failure must leave it working."""
    root = tmp_path_factory.mktemp("malformed-app")
    tiny = make_tiny_llama(root / "tiny-llama")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TRANSFORMER_EXPLORER_HOME", str(root / "store"))
        patch.setattr(QMessageBox, "warning", lambda parent, title, text, *a: dialogs["warnings"].append(text))
        patch.setattr(QMessageBox, "question",
                      lambda parent, title, text, *a: dialogs["questions"].append(text) or QMessageBox.StandardButton.No)
        settings = AppSettings(QSettings(str(root / "settings.ini"), QSettings.Format.IniFormat))
        window = MainWindow(settings=settings, autosave_path=root / "autosave.json", catalog=lambda: [])
        window.show()
        window.prompt.set_text(PROMPT)
        window.open_model(str(tiny))
        _wait(qapp, lambda: window.session.trace is not None and not window.worker.busy)
        window.tiny = tiny
        yield window
        window.close()


def _wait(app, condition, timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "the window did not settle"
        app.processEvents()
        time.sleep(0.005)


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


@pytest.mark.xfail(strict=True, reason="the engine's UnsupportedModelError for an unknown model_type does not "
                                       "name the folder (explorer/core/config.py; reported to the lead)")
def test_an_unsupported_architecture_names_its_folder(qtbot, window, dialogs, tmp_path):
    case = next(c for c in CASES if c.name == "unsupported architecture")
    path = case.build(good_folder(tmp_path / "mamba-model"), tmp_path)
    assert "mamba-model" in opened_badly(qtbot, window, dialogs, path)
