"""A session (opened, or an autosave restored after a crash) whose model path is a named pipe: the window
says so in one dialog naming the pipe, without waiting on it, and the model thread goes on working with
the model it had (a blocked open() would hold that thread forever: nothing ever writes to the pipe)."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import transformers  # noqa: E402,F401  (the tiny model is written with it; missing, the run fails, never skips)

from explorer.app.state import session_file
from tests.app.shared_window import window_with_tiny_model


@pytest.fixture(scope="module")
def dialogs():
    return {"warnings": [], "questions": []}


@pytest.fixture(scope="module")
def window(qapp, tmp_path_factory, dialogs):
    with window_with_tiny_model(qapp, tmp_path_factory.mktemp("session-fifo"), dialogs) as window:
        yield window


def _pipe_model(kind: str, tmp_path: Path, window) -> tuple[Path, Path]:
    """(what the session names as its model, the pipe in it)."""
    if kind == "gguf":
        pipe = tmp_path / "model.gguf"
        os.mkfifo(pipe)
        return pipe, pipe
    if kind == "gguf in the store":
        store = Path(os.environ["TRANSFORMER_EXPLORER_HOME"])
        pipe = store / "models" / f"pipe-{tmp_path.name}" / "model.gguf"
        pipe.parent.mkdir(parents=True)
        os.mkfifo(pipe)
        return pipe, pipe
    folder = tmp_path / "folder"
    folder.mkdir()
    for item in window.tiny.iterdir():
        if item.name != kind:
            (folder / item.name).write_bytes(item.read_bytes())
    os.mkfifo(folder / kind)
    return folder, folder / kind


def _session_naming(window, model: Path, path: Path) -> Path:
    body = json.loads(window.session_state().to_json())
    body["model"] = str(model)
    path.write_text(json.dumps(body), encoding="utf-8")
    return path


def _refused_and_still_working(qtbot, window, dialogs, seen: int, pipe: Path) -> None:
    qtbot.waitUntil(lambda: len(dialogs["warnings"]) > seen, timeout=60000)
    qtbot.waitUntil(lambda: window.controller.loading is None and not window.worker.busy, timeout=60000)
    new = dialogs["warnings"][seen:]
    assert len(new) == 1, new
    assert str(pipe) in new[0] and "named pipe" in new[0] and "\n" not in new[0], new[0]
    assert window.worker._thread.is_alive()
    assert window.controller.summary.name == "tiny-llama"
    before = window.session.trace.n_steps
    window.actions.step.trigger()                           # the model thread takes work: it is not stuck
    qtbot.waitUntil(lambda: window.session.trace.n_steps == before + 1, timeout=60000)
    assert Path(pipe).is_fifo(), "the pipe is left as it was"


@pytest.mark.parametrize("kind", ["gguf", "gguf in the store", "config.json", "model.safetensors", "tokenizer.json"])
def test_a_session_whose_model_is_a_pipe_is_refused_and_the_model_thread_goes_on(qtbot, window, dialogs,
                                                                                 tmp_path, kind):
    model, pipe = _pipe_model(kind, tmp_path, window)
    seen = len(dialogs["warnings"])
    window.menus.open_session_file(str(_session_naming(window, model, tmp_path / "session.json")))
    _refused_and_still_working(qtbot, window, dialogs, seen, pipe)


def test_an_autosave_whose_model_is_a_pipe_is_refused_on_restore(qtbot, window, dialogs, tmp_path):
    model, pipe = _pipe_model("gguf", tmp_path, window)
    crashed = _session_naming(window, model, tmp_path / "autosave.json")
    body = json.loads(crashed.read_text(encoding="utf-8"))
    crashed.write_text(json.dumps({**body, "pid": 2 ** 22 + 12345}), encoding="utf-8")   # a run that died
    state = session_file.crashed_session(crashed)
    assert state is not None and state.model == str(pipe)
    seen = len(dialogs["warnings"])
    window.restore_session(state)
    _refused_and_still_working(qtbot, window, dialogs, seen, pipe)
