"""The KV cache's first raise at 8,000 tokens (issue 22, "switching tabs never blocks for more than 100 ms"): the
panel built and shown in one turn of the event loop draws its occupancy plots and paged blocks on the next, and
then draws what the panel draws at once when the trace comes while it is shown."""
from __future__ import annotations

import numpy as np

from explorer.app.panels import KVCachePanel
from explorer.app.state.session import Session
from tests.app.test_kv_cache_long_trace import STEPS, long_trace


def drawing(panel) -> list:
    """Every curve's and bar's data of the two plots, the blocks' image, and the summary line."""
    items = []
    for plot in (panel.layer_plot, panel.total_plot):
        for item in plot.items:
            if hasattr(item, "getData"):
                items.extend(np.asarray(a) for a in item.getData() if a is not None)
            elif hasattr(item, "opts") and "height" in item.opts:
                items.append(np.asarray(item.opts["height"]))
    image = panel.blocks.image.image
    return items + [np.asarray(image), panel.summary.text()]


def panel_on(qtbot, session):
    panel = KVCachePanel(session)
    qtbot.addWidget(panel)
    panel.resize(1200, 420)
    return panel


def test_the_first_raise_at_a_long_trace_draws_on_the_next_turn_the_same_as_at_once(qtbot):
    trace = long_trace(STEPS)
    at_once = panel_on(qtbot, Session())
    at_once.show()
    at_once.session.set_trace(trace)                              # shown first: drawn in the same call
    session = Session()
    session.set_trace(trace)
    raised = panel_on(qtbot, session)
    raised.show()                                                 # built with the trace there: its first raise
    assert raised.blocks.image.image is None, "the blocks were drawn in the raise's own turn"
    assert "Drawing" in raised.summary.text(), "no working state while the drawing waits"
    qtbot.waitUntil(lambda: raised.blocks.image.image is not None, timeout=5000)
    ours, theirs = drawing(raised), drawing(at_once)
    assert len(ours) == len(theirs) and len(ours) > 3
    for mine, one_shot in zip(ours, theirs):
        if isinstance(mine, str):
            assert mine == one_shot
        else:
            np.testing.assert_array_equal(mine, one_shot)


def test_the_drawing_after_the_raise_is_of_the_trace_there_then(qtbot):
    session = Session()
    session.set_trace(long_trace(STEPS))
    panel = panel_on(qtbot, session)
    panel.show()
    shorter = long_trace(2)
    session.set_trace(shorter)                                    # a new trace before the next turn
    qtbot.waitUntil(lambda: panel.blocks.image.image is not None and not panel._draw_later.isActive(), timeout=5000)
    at_once = panel_on(qtbot, Session())
    at_once.show()
    at_once.session.set_trace(shorter)
    ours, theirs = drawing(panel), drawing(at_once)
    assert ours[-1] == theirs[-1]
    for mine, one_shot in zip(ours[:-1], theirs[:-1]):
        np.testing.assert_array_equal(mine, one_shot)
