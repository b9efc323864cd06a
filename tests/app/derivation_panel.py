"""A "Show the work" panel on a real model's trace under an experiment, as the panel tests use it."""
from __future__ import annotations

from explorer.app.panels.derivation import DerivationPanel
from explorer.app.state.session import Session
from explorer.app.widgets.model_call import thread_executor
from explorer.core.intervention import Experiment


def derivation_panel(qtbot, loaded, trace, intervention) -> DerivationPanel:
    """The panel shown at 1080 x 300 with `intervention` on, its model calls run on a thread, `trace` set."""
    session = Session()
    session.set_model(loaded.info)
    session.set_experiments((Experiment(intervention),))
    panel = DerivationPanel(session)
    qtbot.addWidget(panel)
    panel.resize(1080, 300)
    panel.show()
    qtbot.waitExposed(panel)
    panel.executor = thread_executor(loaded)
    session.set_trace(trace)
    return panel
