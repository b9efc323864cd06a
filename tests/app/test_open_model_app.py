"""The app's opener gives the answer the API gives (tests/core/test_open_model.py): a folder, its config.json and a
.gguf file open the same model, and a FIFO, a missing path, a folder without config.json and an unknown suffix
show the API's one sentence in one dialog, leaving the open model as it was. A drop goes to the opener for every
path the door does not refuse as no model at all."""
from __future__ import annotations

import pytest
import transformers  # noqa: E402,F401  (the tiny model is written with it; missing, the run fails, never skips)

import explorer
from explorer.app.window.model_refs import is_model_path
from explorer.core.errors import ExplorerError
from tests.app.shared_window import window_with_tiny_model
from tests.core.test_open_model import BAD, GOOD, described, model_paths, sentence


@pytest.fixture(scope="module")
def dialogs():
    return {"warnings": [], "questions": []}


@pytest.fixture(scope="module")
def paths(tmp_path_factory):
    return model_paths(tmp_path_factory.mktemp("door"))


@pytest.fixture(scope="module")
def window(qapp, tmp_path_factory, dialogs):
    with window_with_tiny_model(qapp, tmp_path_factory.mktemp("door-app"), dialogs) as window:
        yield window


def settled(qtbot, window) -> None:
    qtbot.waitUntil(lambda: not window.worker.busy and window.controller.loading is None, timeout=60000)


@pytest.mark.parametrize("case", GOOD)
def test_a_model_path_opens_the_model_the_api_opens(qtbot, window, dialogs, paths, case):
    seen = len(dialogs["warnings"])
    window.open_model(str(paths[case]))
    qtbot.waitUntil(lambda: window.controller.summary is not None and window.controller.summary.name == "tiny"
                    and window.session.trace is not None and window.session.trace.model.name == "tiny", timeout=60000)
    settled(qtbot, window)
    api = explorer.load(paths[case]).info
    shown = window.session.trace.model
    assert (shown.name, shown.n_layers, shown.n_heads, shown.n_kv_heads) == (
        described(paths, case).name, api.n_layers, api.n_heads, api.n_kv_heads)
    assert dialogs["warnings"][seen:] == [] and is_model_path(str(paths[case]))
    window.open_model(str(window.tiny))                  # back to the tiny Llama, so the next case is seen to load
    qtbot.waitUntil(lambda: window.controller.summary.name == "tiny-llama", timeout=60000)
    settled(qtbot, window)


@pytest.mark.parametrize("case", BAD)
def test_a_bad_path_shows_the_api_sentence_and_keeps_the_model(qtbot, window, dialogs, paths, case):
    with pytest.raises(ExplorerError) as raised:
        explorer.load(paths[case])
    assert str(raised.value) == sentence(paths, case)
    before, seen = window.session.trace, len(dialogs["warnings"])
    window.open_model(str(paths[case]))
    qtbot.waitUntil(lambda: len(dialogs["warnings"]) > seen, timeout=60000)
    settled(qtbot, window)
    assert dialogs["warnings"][seen:] == [sentence(paths, case)]
    assert window.controller.summary.name == "tiny-llama" and window.session.trace is before
    assert is_model_path(str(paths[case])) == (case != "unknown suffix")
