"""The contract every panel keeps, on a panel of its own: a step of the same run keeps its jobs and results,
while a new run, a model, a cancel or an error drops them (its Askers stop waiting, its background work
stops and no late answer is drawn) and clears the pointer's readout; `drawn()` names what it draws."""
from __future__ import annotations

import threading

import numpy as np
import pytest

from explorer.app.panels.base import Panel
from explorer.app.state.session import CANCEL, ERROR, Session
from explorer.app.widgets.asking import Asker
from explorer.app.widgets.grid_filler import Background


class Probe(Panel):
    """A panel that asks one question per position and keeps its answer."""

    object_name = "probe"

    def __init__(self, session) -> None:
        self.forgotten = 0
        super().__init__(session)
        self.executor = lambda work: None            # a model thread that never answers
        self.asker = Asker(self, lambda key, answer: None, lambda message: None)
        self.background = Background(self)

    def forget(self) -> None:
        self.forgotten += 1

    def show_selection(self, selection) -> None:
        if self.trace is not None:
            self.asker.ask((self.trace.model.name, self.trace.n_tokens), lambda *a: None)


@pytest.fixture(scope="module")
def runs():
    """A prefill and its next step (one run), and another prompt's prefill (another run)."""
    from explorer.core.decode import Decoder
    from explorer.core.runtime import from_tensors
    from tests.core.conftest import make_hf_model

    hf = make_hf_model("llama", seed=5)
    loaded = from_tensors(hf.config.to_dict(), hf.state_dict(), name="tiny-llama")
    decoder = Decoder(loaded)
    first = decoder.prefill(np.arange(6) * 7 % 90)
    stepped = decoder.step()
    other = decoder.prefill(np.arange(5) * 3 % 90)
    return loaded, first, stepped, other


@pytest.fixture
def probe(qtbot, runs):
    session = Session()
    session.set_model(runs[0].info)
    panel = Probe(session)
    qtbot.addWidget(panel)
    panel.show()
    qtbot.waitExposed(panel)
    return panel


def test_a_step_keeps_the_run_s_work_and_another_run_drops_it(probe, runs):
    _loaded, first, stepped, other = runs
    session = probe.session
    session.set_trace(first)
    assert probe.asker.call.running
    forgotten = probe.forgotten
    gate = threading.Event()
    probe.background.run(lambda cancelled: gate.wait(5))
    probe.readout.setText("A[1, 0] = 0.5")
    session.set_trace(stepped)                        # the same run a token longer
    assert probe.forgotten == forgotten and probe.background.running
    assert probe.drawn().trace_id == session.trace_id and probe.drawn().model_id == session.model_id
    generation = probe.background.generation
    session.set_trace(other)                          # another prompt's run
    assert probe.forgotten == forgotten + 1
    assert not probe.background.running and probe.background.generation > generation
    assert probe.readout.text().strip() == ""
    assert probe.drawn().trace_id == session.trace_id
    gate.set()


@pytest.mark.parametrize("reason", [CANCEL, ERROR])
def test_a_cancel_or_an_error_drops_the_questions_and_asks_again(probe, runs, reason):
    session = probe.session
    session.set_trace(runs[1])
    first_call, forgotten = probe.asker.call._generation, probe.forgotten
    session.drop_work(reason)
    assert probe.forgotten == forgotten + 1
    assert probe.asker.call.running and probe.asker.call._generation == first_call + 2   # dropped, asked anew


def test_a_new_model_drops_everything_and_an_empty_session_says_why(probe, runs):
    session = probe.session
    session.set_trace(runs[1])
    forgotten = probe.forgotten
    session.set_trace(None)
    session.set_model(runs[0].info)                   # the model opened again (a reload)
    assert probe.forgotten == forgotten + 2 and not probe.asker.call.running
    drawn = probe.drawn()
    assert drawn.kind == "empty" and drawn.why == probe.empty_text and probe.note.text() == drawn.why
