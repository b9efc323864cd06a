"""An 8,000-token prompt run from the window (issue 16): no trace-memory question under the default budget,
a progress report for every layer, and Cancel from the progress dialog stops the prefill with nothing half done.
The model is a tiny random Llama written with a context long enough for the prompt."""
from __future__ import annotations

import pytest
from PySide6.QtWidgets import QPushButton

from explorer.app.run import budget_dialog
from explorer.app.state.freshness import EDITED
from tests.app.window_helpers import idle, opened
from tests.core.tiny_checkpoints import LLAMA_CONFIG, write_hf_folder

pytestmark = pytest.mark.usefixtures("store_home")  # the store in the test's folder

N = 8000
LAYERS = 4
TEXT = ("To be, or not to be, that is the question: Whether 'tis nobler in the mind to suffer "
        "The slings and arrows of outrageous fortune, Or to take arms against a sea of troubles. ")


@pytest.fixture(scope="module")
def long_llama(tmp_path_factory):
    folder = tmp_path_factory.mktemp("models") / "tiny-long-llama"
    write_hf_folder(folder, dict(LLAMA_CONFIG, num_hidden_layers=LAYERS, max_position_embeddings=N + 64))
    return folder


def long_prompt(window) -> str:
    """TEXT repeated and cut where its N-th token ends (BOS included)."""
    tokenizer = window.controller.summary.tokenizer
    text = TEXT
    while len(tokenizer.encode(text).ids) < N:
        text *= 2
    return text[: tokenizer.encode(text).spans[N - 1][1]]


@pytest.fixture
def typed(qtbot, window, long_llama, monkeypatch):
    """The window with the tiny long model open and an N-token prompt typed (not run); progress reports kept.
    The attention and head-atlas docks are closed: their all-heads views compute in the background, not here."""
    for name in ("attention", "atlas"):
        window.docks[name].close()
    opened(qtbot, window, long_llama, prompt="To be")
    window.prompt.set_text(long_prompt(window))
    n = len(window.session.tokens.ids)
    assert abs(n - N) <= 2
    asked = []
    monkeypatch.setattr(budget_dialog, "choose", lambda parent, title, text, offered: asked.append(text))
    reports = []
    window.worker.run_progress.connect(lambda fraction, text: reports.append(fraction))
    return window, n, asked, reports


def test_an_8000_token_prompt_runs_under_the_default_budget_reporting_every_layer(qtbot, typed, dialogs):
    window, n, asked, reports = typed
    window.actions.run.trigger()
    trace = idle(qtbot, window, lambda: window.session.trace.n_tokens == n)
    assert asked == [] and dialogs["questions"] == []
    assert reports[-LAYERS:] == [(i + 1) / LAYERS for i in range(LAYERS)]
    assert trace.steps[0].layers[0].attn.on_demand                   # its maps are rebuilt when a view asks


def test_cancel_in_the_progress_dialog_stops_an_8000_token_prefill(qtbot, typed):
    window, n, asked, reports = typed
    progress = window.controller.run_progress
    notices = []
    window.controller.notice.connect(notices.append)
    pressed = []

    def press_cancel(fraction, text) -> None:                       # Cancel, as a person presses it, after layer 1
        if not pressed and progress.dialog is not None:
            pressed.append(fraction)
            progress.dialog.findChild(QPushButton).click()

    before = window.session.trace                                     # the short prompt's, run when it opened
    window.worker.run_progress.connect(press_cancel)
    texts = []
    window.worker.run_progress.connect(lambda fraction, text: texts.append(text))
    window.actions.run.trigger()
    idle(qtbot, window, lambda: bool(pressed) and any("cancelled" in notice for notice in notices))
    # Stopped before its last layer (the reports after are the shown trace's replay, a few tokens long)
    assert pressed == [1 / LAYERS] and not any(t.startswith(f"Prefilling {n:,} ") and t.endswith(
        f"layer {LAYERS} of {LAYERS}") for t in texts), texts
    assert any(t.startswith(f"Prefilling {n:,} ") for t in texts), texts          # its reports are these
    assert window.session.trace is before and window.session.out_of_date == EDITED   # kept, said to be old
    held = window.worker._loop._state.decoder.trace                   # nothing of the long prompt half done
    assert held is None or held.n_tokens < n // 2
    assert progress.dialog is None
