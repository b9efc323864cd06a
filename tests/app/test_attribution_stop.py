"""Why this token and Stop (Esc): an attribution being computed on the model thread is cancelled there (the
core stops at its next check), the panel says it was stopped and offers Compute, and nothing is asked again
until the person presses it, picks another position, or a new run comes; an attribution already drawn stays.
(Before, the cancel dropped the question and the panel, shown, asked the same one again at once.)"""
from __future__ import annotations

import threading

import numpy as np
import pytest
import transformers  # noqa: F401  (the tiny model is written with it; missing, the run fails, never skips)

from explorer.app.panels.attribution import AttributionPanel
from explorer.app.state.session import Session
from explorer.core import attribution
from tests.app.model_thread import press_stop, tiny_worker
from tests.app.why_helpers import SIZES, shown

PROMPT = "To be, or not to be"


@pytest.fixture(scope="module")
def model_thread(qapp, tmp_path_factory):
    worker = tiny_worker(qapp, tmp_path_factory)
    yield worker
    worker.shutdown()


@pytest.fixture
def gated(monkeypatch):
    """The model thread's attribution waits for `gate` and then runs the real one with its cancel flag;
    `outcomes` says how each ended ("answered" or "cancelled")."""
    gate, calls, outcomes, real = threading.Event(), [], [], attribution.attribute

    def attribute(loaded, ids, position=None, token_id=None, intervention=None, cancel=None):
        calls.append(position)
        gate.wait(30)
        try:
            result = real(loaded, ids, position, token_id, intervention=intervention, cancel=cancel)
        except attribution.AttributionCancelled:
            outcomes.append("cancelled")
            raise
        outcomes.append("answered")
        return result

    monkeypatch.setattr(attribution, "attribute", attribute)
    return gate, calls, outcomes


def test_stop_cancels_the_attribution_and_asks_it_again_only_when_the_person_does(qtbot, model_thread, gated):
    gate, calls, outcomes = gated
    trace = model_thread.run(PROMPT)
    session = Session()
    session.set_model(model_thread.summary.info)
    panel = shown(qtbot, AttributionPanel(session), SIZES["wide"])
    panel.executor = model_thread.worker.run_job              # the app's model thread
    session.set_trace(trace)
    qtbot.waitUntil(lambda: len(calls) == 1, timeout=30000)   # the job runs on the model thread
    press_stop(model_thread, session)
    gate.set()
    qtbot.waitUntil(lambda: outcomes == ["cancelled"], timeout=30000)
    model_thread.idle()
    panel.refresh()
    session.select(token=session.selection.token)             # the same selection again
    assert calls == [trace.n_tokens - 1] and not panel.asker.call.running     # not asked again
    assert panel.result is None and panel.compute_button.isVisible()
    assert "Stopped" in panel.stopped_label.text() and "Compute" in panel.stopped_label.text()
    assert panel.drawn().trace_id == session.trace_id and not panel.note.isVisible()

    panel.compute_button.click()                             # the person asks
    qtbot.waitUntil(lambda: panel.result is not None, timeout=30000)
    result = panel.result
    assert outcomes == ["cancelled", "answered"] and not panel.compute_button.isVisible()
    assert result.token_id == int(trace.candidates(trace.n_tokens - 1)[0][0])     # the top prediction's logit
    assert np.isclose(result.embed + result.heads.sum() + result.mlp.sum() + result.rest, result.logit, atol=1e-4)

    press_stop(model_thread, session)                        # a Stop while idle: the attribution drawn stays
    model_thread.idle()
    assert len(calls) == 2 and panel.result is result and not panel.compute_button.isVisible()
    assert not panel.stopped_label.isVisible()

    other = model_thread.run(PROMPT + " that is")            # a new run asks again
    session.set_trace(other)
    qtbot.waitUntil(lambda: panel.result is not None and panel.result is not result, timeout=30000)
    assert calls[-1] == other.n_tokens - 1 and outcomes[-1] == "answered"


def test_after_a_stop_another_position_is_asked_at_once(qtbot, model_thread, gated):
    gate, calls, outcomes = gated
    trace = model_thread.run(PROMPT)
    session = Session()
    session.set_model(model_thread.summary.info)
    panel = shown(qtbot, AttributionPanel(session), SIZES["wide"])
    panel.executor = model_thread.worker.run_job
    session.set_trace(trace)
    qtbot.waitUntil(lambda: len(calls) == 1, timeout=30000)
    press_stop(model_thread, session)
    gate.set()
    qtbot.waitUntil(lambda: outcomes == ["cancelled"], timeout=30000)
    session.select(token=2)
    qtbot.waitUntil(lambda: panel.result is not None, timeout=30000)
    assert calls == [trace.n_tokens - 1, 2] and panel.result.position == 2 and not panel.compute_button.isVisible()
