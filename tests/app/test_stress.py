"""1,000 random presses on the real window over two tiny random Llamas, checking invariants after each.

Seeded (STRESS_SEED; STRESS_ACTIONS presses). The actions are what a person does (tests/app/stress_actions.py
lists them), each kind at least once. Like a person with tabbed docks, it keeps the token and next-token
panels in view and one other panel at a time (hidden panels redraw when shown), so that 1,000 actions fit
in CI's two minutes; it closes the window at the end. Once the worker is idle after each action the test
checks that the trace, the decoder, its cache, the status bar and the prompt editor all agree, that every
panel in view draws the session's current trace or says plainly that it is empty or out of date, that no
dialog appeared that the action did not call for, that no exception reached the Qt loop, that the window
asks for no more than an emulated 1366x768 screen, and that an error's text stands only in an error line.
"""
from __future__ import annotations

import os
import random

import numpy as np
import pytest
import torch  # noqa: E402  (missing, the run fails, never skips)
import transformers  # noqa: E402,F401  (the tiny model is written with it; missing, the run fails, never skips)
from PySide6.QtWidgets import QMessageBox

from explorer.app.run import budget_dialog
from explorer.core.kv_variants import dtype_bytes, native_variant, shape_from_info
from tests.app import stress_window
from tests.app.screen_fit import SCREENS, emulated_screen
from tests.app.stress_actions import ACTIONS, Run, check_views, check_window, do, schedule, view
from tests.app.tiny_model import make_tiny_llama
from tests.app.window_helpers import new_window

N_ACTIONS = int(os.environ.get("STRESS_ACTIONS", 1000))
SEED = int(os.environ.get("STRESS_SEED", 20261130))
EMPTY_TEXT = ("The prompt is empty",)
ALLOWED = {"export": ("Cannot write", "Nothing to export yet"),   # what an action may say in a warning
           "kind": EMPTY_TEXT}                    # a blank prompt (a tab, a newline) opens a model untraced
NAMED = {"broken": "broken-llama"}                 # a warning that names this file is what the action calls for
EMPTY = ("The prompt is empty",)                   # what any action may say while the prompt is empty
ALWAYS_SHOWN = ("prompt", "tokens", "next_token")


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    root = tmp_path_factory.mktemp("stress-models")
    return [make_tiny_llama(root / "tiny-a", seed=0), make_tiny_llama(root / "tiny-b", seed=1)]


@pytest.fixture(scope="module")
def kinds(tmp_path_factory):
    return stress_window.other_kinds(tmp_path_factory.mktemp("stress-kinds"))


@pytest.fixture
def one_thread():
    """Tiny matrices on a busy 2-core machine: one torch thread is ten times faster than two."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def check_trace(run: Run, trace) -> None:
    """The trace is whole, the decoder holds the same one, and its cache holds exactly its tokens."""
    w = run.window
    assert trace.model.name == w.controller.summary.name
    assert [s.kind for s in trace.steps] == ["prefill"] + ["decode"] * (trace.n_steps - 1)
    assert np.array_equal(np.concatenate([s.positions for s in trace.steps]), np.arange(trace.n_tokens))
    for before, after in zip(trace.steps, trace.steps[1:]):
        assert after.token_ids.tolist() == [before.chosen_id]
    assert trace.n_tokens <= trace.model.max_positions
    shown = w.status.fields["step"].text()
    plural = "" if trace.n_tokens == 1 else "s"
    assert shown.startswith(f"step {trace.n_steps - 1} "), shown
    assert shown.endswith(f" · {trace.n_tokens} token{plural}"), shown
    decoder = w.worker._loop._state.decoder            # safe to read: the worker is idle
    assert decoder.trace.token_ids.tolist() == trace.token_ids.tolist()
    assert decoder.trace.n_steps == trace.n_steps
    shape = shape_from_info(trace.model)
    per_token = native_variant(shape).elements_per_layer * dtype_bytes(trace.model.dtype)
    formula = shape.tokens_held(trace.n_tokens) * per_token
    assert trace.kv_bytes_in_use().tolist() == formula.tolist() == decoder.kv_cache.bytes_in_use()


def check(run: Run, name: str, expected_steps: int | None, warned: list, exceptions) -> None:
    w, trace = run.window, run.window.session.trace
    assert not exceptions, f"{name}: an exception reached the Qt loop: {exceptions[0]}"
    allowed = ALLOWED.get(name, ()) + (EMPTY if not run.prompt else ())
    unexpected = [text for text in warned if not text.startswith(allowed) and NAMED.get(name, "\0") not in text]
    assert not unexpected, f"{name}: unexpected dialog {unexpected}"
    assert w.prompt.text == run.prompt, f"{name}: the prompt editor lost what was typed"
    assert w.controller.summary is not None and w.controller.summary.path == str(run.models[run.model])
    if trace is not None:
        check_trace(run, trace)
    check_views(run, name)
    check_window(run, name)
    if expected_steps == 0:
        assert trace is None, f"{name}: a trace came back after the reset"
    elif expected_steps is not None:
        assert trace is not None and trace.n_steps == expected_steps, f"{name}: wrong step count"


def test_a_thousand_random_actions_keep_every_invariant(qtbot, tmp_path, models, kinds, monkeypatch, one_thread):
    with emulated_screen(SCREENS["1366x768"]):
        thousand_actions(qtbot, tmp_path, models, kinds, monkeypatch)


def thousand_actions(qtbot, tmp_path, models, kinds, monkeypatch) -> None:
    run = Run(random.Random(SEED), None, models, tmp_path, kinds=kinds)
    monkeypatch.setattr(QMessageBox, "warning", lambda parent, title, text, *a: run.warnings.append(text))
    monkeypatch.setattr(QMessageBox, "question", run.question)
    monkeypatch.setattr(budget_dialog, "choose", run.choose)
    (tmp_path / "out").mkdir()
    run.window = window = new_window(qtbot, tmp_path)
    # the window keeps the size it gave itself for the (emulated) 1366x768 screen, as at a first launch
    run.others = [name for name in window.docks if name not in ALWAYS_SHOWN]
    view(run)
    window.prompt.set_text(run.prompt)
    window.open_model(str(models[0]))
    run.idle(qtbot)
    table = {name: action for name, _, action in ACTIONS}
    with qtbot.captureExceptions() as exceptions:
        for name in schedule(run.rng, N_ACTIONS):
            run.log.append(name)
            seen = len(run.warnings)
            expected = do(run, name, table[name], qtbot, monkeypatch)
            run.idle(qtbot)
            try:
                check(run, name, expected if isinstance(expected, int) else None, run.warnings[seen:], exceptions)
            except AssertionError as failure:
                raise AssertionError(f"after {run.log[-8:]} (action {len(run.log)}): {failure}") from None
            run.counts[name] = run.counts.get(name, 0) + 1
    window.close()
    assert not window.worker._thread.is_alive()
    assert not (tmp_path / "autosave.json").exists()
    shown = run.counts.pop("failure shown", 0)
    assert sum(run.counts.values()) == N_ACTIONS and len(run.counts) == len(ACTIONS)
    assert set(run.cases) == {"Reset Layout twice", "Learn", "Reset Layout with Learn open"}, run.cases
    assert run.counts["switch"] > 10 and len(list((tmp_path / "out").glob("*.png"))) > 5
    assert any("memory budget" in q for q in run.questions)    # the context question depends on the draw
    print(f"\nstress: {N_ACTIONS} actions survived: {sorted(run.counts.items())}; "
          f"{len(run.questions)} questions, {len(run.warnings)} expected warnings, "
          f"{shown} failures in an error line; cases {sorted(run.cases.items())}")
