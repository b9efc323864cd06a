"""Experiments belong to the model they were made on (drive 21 m19).

An Alt-click ablation of L0.H1 made on Gemma 3 stayed on after a switch to MiniLM and then to shakespeare-gqa,
ablating their L0.H1 unsaid, while another made on MiniLM was dropped without a word. A switch to another model
clears them and says so once in the status bar (and whole, naming the model before, in the Experiments dock);
the new model's trace is the model's own. A session file's experiments come back with its model.
"""
from __future__ import annotations

from contextlib import contextmanager

import numpy as np
import pytest
from PySide6.QtCore import QSize

from explorer.app.panels.experiments import ExperimentsPanel
from explorer.app.state.session_file import SessionState
from explorer.core.intervention import Experiment, HeadAblation, Intervention
from tests.app.journey import BUNDLED, journey_in_a_window

pytestmark = pytest.mark.usefixtures("store_home")  # the store in the test's folder

PROMPT = "To be, or not to be, that is the question"
ABLATE = Intervention(ablations=(HeadAblation(0, 1, "zero"),))


def fresh_attention(folder, ids, intervention=None) -> list[np.ndarray]:
    """Every layer's attention of the prompt `ids` on `folder`'s model, by the core alone (no window)."""
    from explorer.core.decode import Decoder
    from explorer.core.runtime import load_model

    decoder = Decoder(load_model(str(folder)))
    decoder.set_intervention(intervention)
    decoder.prefill(np.asarray(ids, dtype=np.int64))
    return [decoder.trace.attention(layer) for layer in range(decoder.trace.model.n_layers)]


def open_and_wait(journey, name: str) -> None:
    journey.window.prompt.set_text(PROMPT)
    journey.window.open_model(str(BUNDLED / name))
    journey.idle(f"opening {name}")


@contextmanager
def ablated_on_gqa(qtbot, tmp_path, monkeypatch):
    """A window (1366 x 768) with shakespeare-gqa open on PROMPT and L0.H1 ablated there: the journey."""
    with journey_in_a_window(qtbot, tmp_path, monkeypatch, QSize(1366, 768)) as journey:
        open_and_wait(journey, "shakespeare-gqa")
        journey.window.session.add_experiment(ABLATE)
        journey.idle("ablating L0.H1 on shakespeare-gqa")
        yield journey


def test_a_switch_clears_the_experiments_and_runs_the_new_model_plain(qtbot, tmp_path, monkeypatch):
    with ablated_on_gqa(qtbot, tmp_path, monkeypatch) as journey:
        window, session = journey.window, journey.window.session
        said = []
        window.status.messageChanged.connect(lambda text: text and said.append(text))
        open_and_wait(journey, "shakespeare-mqa")
        assert session.experiments == (), f"still on after the switch: {session.experiments}"
        trace = session.trace
        assert trace is not None and trace.model.name == "shakespeare-mqa"
        ids = trace.steps[0].token_ids
        plain = fresh_attention(BUNDLED / "shakespeare-mqa", ids)
        ablated = fresh_attention(BUNDLED / "shakespeare-mqa", ids, ABLATE)
        assert max(np.abs(a - b).max() for a, b in zip(plain, ablated)) > 1e-3, "the ablation changes nothing here"
        for layer, expected in enumerate(plain):
            np.testing.assert_allclose(trace.attention(layer), expected, atol=1e-5, err_msg=f"layer {layer}")
        cleared = [text for text in said if "experiments cleared" in text.lower()]    # short: the bar clips
        assert len(cleared) == 1, f"the notices: {said}"
        panel = journey.raise_panel("experiments")
        assert isinstance(panel, ExperimentsPanel)           # the whole sentence, naming the model before
        summary = panel.summary.text()
        assert panel.list.count() == 0 and "experiments on shakespeare-gqa were cleared" in summary, summary


def test_a_session_files_experiments_come_back_with_its_model(qtbot, tmp_path, monkeypatch):
    with ablated_on_gqa(qtbot, tmp_path, monkeypatch) as journey:
        window, session = journey.window, journey.window.session
        saved = window.session_state()
        assert saved.experiments == (Experiment(ABLATE),)
        open_and_wait(journey, "shakespeare-mqa")
        assert session.experiments == ()
        window.restore_session(SessionState.from_json(saved.to_json()))
        journey.idle("opening the saved session")
        assert window.controller.summary.name == "shakespeare-gqa"
        assert session.experiments == (Experiment(ABLATE),), "the session file's experiments did not come back"
        ids = session.trace.steps[0].token_ids
        expected = fresh_attention(BUNDLED / "shakespeare-gqa", ids, ABLATE)
        for layer, weights in enumerate(expected):
            np.testing.assert_allclose(session.trace.attention(layer), weights, atol=1e-5, err_msg=f"layer {layer}")
