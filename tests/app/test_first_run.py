"""The first minute: the default model opens with a prompt it completes well, already prefilled, in a window
sized to the screen; `--no-restore` keeps scripts from being asked about a crashed session."""
from __future__ import annotations

import time
from types import SimpleNamespace

import pytest
import transformers  # noqa: E402,F401  (the tiny model is written with it; missing, the run fails, never skips)
from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QApplication

from explorer.app.start import launch
from explorer.app.window import model_refs
from explorer.app.window.main_window import MainWindow
from explorer.app.window.settings import AppSettings
from explorer.cli import build_parser

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


@pytest.fixture
def launched(monkeypatch, tmp_path):
    """Run `launch(args)` with settings in tmp_path; its event loop runs until `until(window)` holds."""
    settings = AppSettings(QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat))
    monkeypatch.setattr(launch, "AppSettings", lambda: settings)
    monkeypatch.setattr(launch, "apply_theme", lambda *args, **kwargs: "light")
    asked = []
    monkeypatch.setattr(MainWindow, "offer_crash_restore", lambda self: asked.append(True) or False)
    seen = {}

    def run(argv, until):
        def exec_until():
            app = QApplication.instance()
            window = next(w for w in app.topLevelWidgets() if isinstance(w, MainWindow) and w.isVisible())
            deadline = time.monotonic() + 120
            while not until(window) and time.monotonic() < deadline:
                app.processEvents()
                time.sleep(0.01)
            learn = getattr(window, "learn_dock", None)          # read now: launch deletes the window after
            seen.update(window=window, state=window.windowState(), trace=window.session.trace,
                        frame=window.frameGeometry(), available=window.screen().availableGeometry(),
                        prompt=window.prompt.text, asked=bool(asked),
                        learn_shown=learn is not None and not learn.isHidden(),
                        learn_stop=learn.widget().index if learn is not None else None)
            window.close()
            window.deleteLater()
            return 0

        monkeypatch.setattr(QApplication, "exec", lambda self: exec_until())
        assert launch.launch(build_parser().parse_args(argv)) == 0
        return SimpleNamespace(**seen)

    return run


def prefilled(window) -> bool:
    return window.session.trace is not None and not window.worker.busy


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
