"""A "Show the work" panel on a real model's trace, as the panel tests use it: under an experiment, or in a room
of a given size with a cell derived (the layout tests)."""
from __future__ import annotations

from explorer.app.panels.derivation import DerivationPanel
from explorer.app.state.session import Session
from explorer.app.widgets.model_call import thread_executor
from explorer.core.intervention import Experiment
from tests.app.screen_fit import settle

CELL = {"layer": 1, "head": 0, "token": 6, "key": 3}     # a cell of traced_llama's trace with q·k bars to show


def derivation_panel(qtbot, loaded, trace, intervention=None, size: tuple[int, int] = (1080, 300)) -> DerivationPanel:
    """The panel shown at `size` with `intervention` on (None: no experiment), its model calls run on a thread,
    `trace` set."""
    session = Session()
    session.set_model(loaded.info)
    if intervention is not None:
        session.set_experiments((Experiment(intervention),))
    panel = DerivationPanel(session)
    qtbot.addWidget(panel)
    panel.resize(*size)
    panel.show()
    qtbot.waitExposed(panel)
    panel.executor = thread_executor(loaded)
    session.set_trace(trace)
    return panel


def derived_in_room(qtbot, traced_llama, size: tuple[int, int]) -> DerivationPanel:
    """The panel on traced_llama's trace, first laid out in a `size` room, with CELL derived and drawn."""
    loaded, trace = traced_llama
    panel = derivation_panel(qtbot, loaded, trace, size=size)
    panel.session.select(**CELL)
    qtbot.waitUntil(lambda: panel.derived is not None, timeout=20000)
    settle(0.5)
    return panel
