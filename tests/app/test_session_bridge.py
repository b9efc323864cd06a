"""The session's Qt bridge emits `<noun>_changed` only for a real change, and the asks for model work are a
separate object: a spy on every state signal hears nothing when a setter is given what the state holds."""
from __future__ import annotations

from PySide6.QtCore import Signal

from explorer.app.state.model_requests import ModelRequests
from explorer.app.state.session import Session
from explorer.core.intervention import HeadAblation, Intervention
from tests.app.synthetic_trace import build_trace

STATE_SIGNALS = ("trace_changed", "tokens_changed", "selection_changed", "model_changed", "busy_changed",
                 "out_of_date_changed", "experiments_changed", "not_run_changed", "context_changed", "trace_arriving")


def spied(session: Session) -> list:
    heard = []
    for name in STATE_SIGNALS:
        getattr(session, name).connect(lambda *args, name=name: heard.append(name))
    return heard


def test_setting_what_the_session_holds_emits_nothing(qapp):
    session = Session()
    trace = build_trace(n_layers=2, n_heads=4, prompt_len=6)
    session.set_model(trace.model)
    session.set_trace(trace)
    session.set_busy(True)
    session.set_out_of_date("edited")
    session.set_not_run("long")
    session.add_experiment(Intervention(ablations=(HeadAblation(1, 2),)))
    session.select(token=2, layer=1, head=3)
    heard = spied(session)
    session.set_trace(trace)
    session.set_busy(True)
    session.set_out_of_date("edited")
    session.set_not_run("long")
    session.set_experiments(list(session.experiments))
    session.select(token=2, layer=1, head=3)
    session.select(token=99)                        # clamped to the last token: 5, a change
    assert heard == ["selection_changed"] and session.selection.token == trace.n_tokens - 1
    assert session.state.selection is session.selection and session.state.trace is trace   # read from the state


def test_requests_are_their_own_object_and_not_state_signals(qapp):
    session = Session()
    assert isinstance(session.requests, ModelRequests)
    own = {name for name, value in vars(Session).items() if isinstance(value, Signal)}
    assert own == set(STATE_SIGNALS) | {"error_raised", "comparison_changed", "model_opening"}   # relayed events
    asks = {name for name, value in vars(ModelRequests).items() if isinstance(value, Signal)}
    assert asks and not any(hasattr(session, name) for name in asks), "a request is reachable on the session"
