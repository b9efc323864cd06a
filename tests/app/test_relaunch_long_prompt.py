"""A relaunch does not run a long last prompt unasked: the app starts (launch(), as `python -m explorer` does)
with the person's last prompt from the settings, opens the model, and waits for Run, saying why nothing is
shown, instead of minutes of prefill no one can decline (seen with a 3,600-token prompt). A short last
prompt is run at once, as before.

Expectation: the trace is None and the editor holds the last prompt word for word; the panels' note names the
prompt's own token count, counted here with the model's tokenizer.
"""
from __future__ import annotations

import json

import pytest
import transformers  # noqa: E402,F401  (the tiny model is written with it; missing, the run fails, never skips)

from explorer.app.start import launch
from tests.app.tiny_model import CORPUS, make_tiny_llama

pytestmark = pytest.mark.usefixtures("store_home")

LONG = " ".join(CORPUS * 5)


def wide_llama(folder):
    """The tiny Llama with room for 2,048 positions, so that a long prompt fits it."""
    wide = make_tiny_llama(folder)
    config = json.loads((wide / "config.json").read_text())
    (wide / "config.json").write_text(json.dumps(dict(config, max_position_embeddings=2048)))
    return wide


def loaded(window) -> bool:
    return window.controller.summary is not None and window.controller.loading is None and not window.worker.busy


def read_when_loaded(seen: dict, also=lambda window: True):
    """An `until` for the launched fixture: true once the model is loaded and `also` holds; it reads then what
    the window shows (launch() deletes the window after its event loop)."""
    def until(window) -> bool:
        if not (loaded(window) and also(window)):
            return False
        seen["n"] = len(window.controller.summary.tokenizer.encode(window.prompt.text).ids)
        seen["note"] = window.docks["attention"].widget().note.text()
        return True
    return until


def test_a_relaunch_waits_for_run_with_a_long_last_prompt(launched, tmp_path, dialogs):
    model = wide_llama(tmp_path / "wide-llama")
    launch.AppSettings().last_prompt = LONG                   # the fixture's settings: a file in tmp_path
    seen = {}
    result = launched(["--no-restore", "--model", str(model)], read_when_loaded(seen))
    assert result.prompt == LONG, "the last prompt is not in the editor"
    n = seen["n"]
    assert n > 1000
    assert result.trace is None, f"the {n}-token last prompt was run unasked at the relaunch"
    assert f"{n:,} tokens" in seen["note"] and "Run" in seen["note"], seen["note"]
    assert dialogs["questions"] == [] and dialogs["warnings"] == []          # nothing asked either


def test_a_relaunch_runs_a_short_last_prompt_at_once(launched, tmp_path, dialogs):
    model = wide_llama(tmp_path / "wide-llama")
    launch.AppSettings().last_prompt = CORPUS[1]
    seen = {}
    result = launched(["--no-restore", "--model", str(model)],
                      read_when_loaded(seen, lambda window: window.session.trace is not None))
    assert result.prompt == CORPUS[1]
    assert result.trace is not None and result.trace.n_tokens == seen["n"]
