"""A relaunch opens the model that was open at the quit (the settings remembered it as models/last, and nothing
read it back: every relaunch opened SmolLM2, found driving the app on bare Xvfb). A model since deleted is not
asked for: the default opens, with no error; a script's run (--no-restore) and --model keep their own choice.

Expectation: the model the window loaded, read from the controller's summary, against the folder named.
"""
from __future__ import annotations

import shutil

import pytest
import transformers  # noqa: E402,F401  (the tiny model is written with it; missing, the run fails, never skips)

from explorer.app.start import launch
from explorer.app.window import model_refs
from tests.app.tiny_model import make_tiny_llama

pytestmark = pytest.mark.usefixtures("store_home")


def loaded(window) -> bool:
    return window.controller.summary is not None and window.controller.loading is None and not window.worker.busy


def opened_reference(launched, argv: list[str]) -> str:
    seen = {}

    def until(window) -> bool:
        if loaded(window):
            seen["reference"] = window.controller.summary.reference
            return True
        return False

    launched(argv, until)
    return seen["reference"]


def test_a_relaunch_opens_the_model_open_at_the_quit(launched, tmp_path, dialogs):
    model = make_tiny_llama(tmp_path / "tiny-llama")
    launch.AppSettings().remember_model(str(model))             # the fixture's settings: a file in tmp_path
    assert opened_reference(launched, []) == str(model)
    assert dialogs["warnings"] == []


def test_a_deleted_last_model_is_not_asked_for_and_a_script_keeps_its_choice(launched, tmp_path, dialogs):
    model = make_tiny_llama(tmp_path / "tiny-llama")
    launch.AppSettings().remember_model(str(model))
    assert opened_reference(launched, ["--no-restore"]) != str(model), "a script's run opened the last model"
    shutil.rmtree(model)
    assert opened_reference(launched, []) == model_refs.default_model(), "the default did not open instead"
    assert dialogs["warnings"] == [], "a deleted last model was asked for at launch"


def test_a_last_model_refused_now_says_why_and_the_default_opens(launched, tmp_path, dialogs):
    """A last model whose files were damaged since is refused in one warning, and the default opens after it: the
    window was left with no model (boundary27)."""
    import json

    model = make_tiny_llama(tmp_path / "tiny-llama")
    launch.AppSettings().remember_model(str(model))
    config = json.loads((model / "config.json").read_text())
    (model / "config.json").write_text(json.dumps({**config, "num_attention_heads": 0}))
    assert opened_reference(launched, []) == model_refs.default_model()
    assert len(dialogs["warnings"]) == 1 and "num_attention_heads = 0 is not legal" in dialogs["warnings"][0]
