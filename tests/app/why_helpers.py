"""The Why-this-token panels' test helpers: a panel shown at a size, and a panel once it has answered for the
tiny Llama's trace (tests/app/conftest.py's `traced_llama` and `session` fixtures)."""
from __future__ import annotations

from explorer.app.widgets.model_call import thread_executor

SIZES = {"wide": (1080, 300), "tall": (380, 520)}


def shown(qtbot, panel, size):
    qtbot.addWidget(panel)
    panel.resize(*size)
    panel.show()
    qtbot.waitExposed(panel)
    return panel


def answered(qtbot, cls, session, traced_llama, layout: str = "wide"):
    """A shown panel asking the tiny model on a thread of its own, once it has answered for the trace."""
    loaded, trace = traced_llama
    panel = shown(qtbot, cls(session), SIZES[layout])
    panel.executor = thread_executor(loaded)
    with qtbot.waitSignal(panel.asker.call.finished, timeout=30000):
        session.set_trace(trace)
    return panel
