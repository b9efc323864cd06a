"""A relaunch after a clean quit brings back the steps decoded (drive20 m18): quit at "step 2 · 11 tokens", the
app came back at "step 0 (prefill)", the settings holding only the last model and prompt. Launched twice through
launch() (as `python -m explorer` starts) with one settings file and one store: stepped, quit, relaunched.

Expectation: the relaunched window's trace has the step count and every token id of the trace shown at the quit,
read from both windows' traces; a long session is put back waiting for Run (issue 22 #18) with no dialog.
"""
from __future__ import annotations

from dataclasses import replace

import pytest
import transformers  # noqa: E402,F401  (the tiny model is written with it; missing, the run fails, never skips)

from explorer.app.run.model_loading import AUTO_RUN_TOKENS
from explorer.app.start import launch
from explorer.app.state import session_file
from tests.app.tiny_model import CORPUS, make_tiny_llama

pytestmark = pytest.mark.usefixtures("store_home")

STEPS = 3


def settled(window) -> bool:
    return (window.controller.summary is not None and window.controller.loading is None
            and not window.worker.busy and window.session.trace is not None)


def stepped_then_quit(launched, model) -> tuple:
    """Launch with `model`, press Step STEPS times, quit: the trace shown at the quit."""
    pressed = []

    def until(window) -> bool:
        if not settled(window):
            return False
        if window.session.trace.n_steps == 1 + STEPS:
            return True
        if len(pressed) < window.session.trace.n_steps:         # one press per step shown
            pressed.append(True)
            window.controller.step()
        return False

    return launched(["--model", str(model)], until).trace


def test_a_relaunch_brings_back_the_steps_decoded(launched, tmp_path, dialogs):
    model = make_tiny_llama(tmp_path / "tiny-llama")
    launch.AppSettings().last_prompt = CORPUS[0]
    quit_trace = stepped_then_quit(launched, model)
    assert quit_trace.n_steps == 1 + STEPS
    again = launched([], settled).trace
    assert again.n_steps == quit_trace.n_steps, f"relaunched at step {again.n_steps - 1}, quit at {STEPS}"
    assert list(again.token_ids) == list(quit_trace.token_ids)
    assert dialogs["questions"] == [] and dialogs["warnings"] == []


def test_a_long_session_comes_back_waiting_for_run(launched, tmp_path, dialogs):
    """The way to decline a long re-run stays: a session whose replay passes AUTO_RUN_TOKENS is put back, not run."""
    model = make_tiny_llama(tmp_path / "tiny-llama")
    launch.AppSettings().last_prompt = CORPUS[0]
    stepped_then_quit(launched, model)
    home = session_file.app_home()
    kept = next(home.glob(session_file.QUIT_SESSION_NAME))
    state = session_file.load(kept)
    long_ids = tuple(state.prompt_ids) * (AUTO_RUN_TOKENS // len(state.prompt_ids) + 1)
    session_file.save(kept, replace(state, prompt_ids=long_ids))
    seen = launched([], lambda window: window.controller.summary is not None and window.controller.loading is None
                    and not window.worker.busy)
    assert seen.trace is None, "a long session was replayed unasked at the relaunch"
    assert seen.prompt == state.prompt
    assert dialogs["questions"] == [] and dialogs["warnings"] == []


def test_a_relaunch_brings_back_the_experiments_of_a_session_with_no_step(launched, tmp_path, dialogs):
    """Quit with an ablation on and nothing decoded: the relaunch opened the last model and prompt, the ablation
    gone without a word (drive23). Expectation: the relaunched session has the experiment, its run under it."""
    from explorer.core.intervention import Intervention

    model = make_tiny_llama(tmp_path / "tiny-llama")
    launch.AppSettings().last_prompt = CORPUS[0]
    ablate = Intervention().ablate(1, 2)
    added = []

    def ablated(window) -> bool:
        if not settled(window):
            return False
        if not added:
            added.append(True)
            window.session.add_experiment(ablate)
            return False
        return window.session.trace_intervention == ablate
    launched(["--model", str(model)], ablated)
    seen = {}

    def back(window) -> bool:
        seen["experiments"] = window.session.experiments
        return settled(window) and window.session.trace_intervention == ablate and window.session.trace.n_steps == 1
    launched([], back)
    assert [e.intervention for e in seen["experiments"] if e.on] == [ablate], seen["experiments"]
    assert dialogs["questions"] == [] and dialogs["warnings"] == []
