"""The first minute: the default model opens with a prompt it completes well, already prefilled, in a window
sized to the screen; `--no-restore` keeps scripts from being asked about a crashed session."""
from __future__ import annotations

import pytest
import transformers  # noqa: E402,F401  (the tiny model is written with it; missing, the run fails, never skips)

from explorer.app.start import launch
from explorer.app.window import model_refs
from explorer.cli import build_parser
from tests.app.window_helpers import prefilled

pytestmark = pytest.mark.usefixtures("store_home")  # the store in the test's folder

SHAKESPEARE = "To be, or not to be, that is the question:"


@pytest.mark.parametrize("reference, prompt", [
    ("smollm2-135m", "The capital of France is"), ("gemma3-270m", "The capital of France is"),
    ("shakespeare-gqa", SHAKESPEARE), ("/x/resources/models/shakespeare-mla", SHAKESPEARE),
    (None, model_refs.GENERIC_PROMPT)])
def test_each_model_opens_with_a_prompt_it_completes_well(reference, prompt):
    assert model_refs.default_prompt(reference) == prompt


def test_the_last_prompt_is_kept_unless_it_was_only_another_models_default():
    assert launch.first_prompt("Once upon a time", "smollm2-135m") == "Once upon a time"
    assert launch.first_prompt(SHAKESPEARE, "smollm2-135m") == "The capital of France is"
    assert launch.first_prompt("", "shakespeare-gqa") == SHAKESPEARE


def test_no_restore_by_flag_or_environment(monkeypatch):
    monkeypatch.delenv(launch.NO_RESTORE_ENV, raising=False)
    assert launch.restore_allowed(build_parser().parse_args([]))
    assert not launch.restore_allowed(build_parser().parse_args(["--no-restore"]))
    monkeypatch.setenv(launch.NO_RESTORE_ENV, "1")
    assert not launch.restore_allowed(build_parser().parse_args([]))


def test_the_first_window_fills_the_screen_and_shows_the_prefilled_default_prompt(launched, tiny, monkeypatch):
    monkeypatch.delenv(launch.NO_RESTORE_ENV, raising=False)
    result = launched(["--model", str(tiny)], prefilled)
    assert result.prompt == model_refs.GENERIC_PROMPT
    assert result.trace is not None and result.trace.steps[0].kind == "prefill"
    assert result.trace.n_tokens == len(result.window.controller.summary.tokenizer.encode(result.prompt).ids)
    assert result.frame.contains(result.available), \
        "the first window sizes itself to the screen (no window manager may)"
    assert result.asked, "without --no-restore a crashed session is offered"


def test_no_restore_and_prompt_flags(launched, tiny):
    result = launched(["--no-restore", "--model", str(tiny), "--prompt", "Whether 'tis nobler"], prefilled)
    assert not result.asked
    assert result.prompt == "Whether 'tis nobler" and result.trace.n_tokens > 1


def test_the_bundled_fallback_says_how_to_get_the_default_model(tmp_path, monkeypatch):
    from explorer.app.window import model_refs

    monkeypatch.setenv("TRANSFORMER_EXPLORER_HOME", str(tmp_path))        # an empty store: nothing pulled
    reference = model_refs.default_model()
    assert reference == model_refs.DEFAULT_BUNDLED
    notice = model_refs.fallback_notice(reference, asked_for=None)
    assert notice and f"python -m explorer pull {model_refs.DEFAULT_PULLED}" in notice
    assert model_refs.fallback_notice(reference, asked_for=reference) is None
    assert model_refs.fallback_notice(model_refs.DEFAULT_PULLED, asked_for=None) is None
