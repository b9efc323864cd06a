"""Alt-click on a grid tile twice (Xvfb, SmolLM2, 1366x768): the head was listed twice among the experiments,
"ablate L1.H2" twice, and Remove had to be pressed twice to undo it."""
from __future__ import annotations

from dataclasses import replace

from explorer.app.state.session_model import SessionModel
from explorer.core.intervention import HeadAblation, Intervention


def test_adding_a_listed_experiment_again_lists_it_once_and_switches_it_on():
    state = SessionModel()
    ablate, other = Intervention(ablations=(HeadAblation(1, 2),)), Intervention(ablations=(HeadAblation(0, 1),))
    state.set_experiments(state.with_experiment(ablate))
    state.set_experiments(state.with_experiment(other))
    again = state.with_experiment(ablate)
    assert [e.intervention for e in again] == [ablate, other]
    state.set_experiments((replace(state.experiments[0], on=False), state.experiments[1]))   # ticked off
    again = state.with_experiment(ablate)
    assert [(e.intervention, e.on) for e in again] == [(ablate, True), (other, True)]
