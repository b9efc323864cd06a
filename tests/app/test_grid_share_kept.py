"""The head grid's share of the attention panel's splitter depends on the width alone, not on the widths before it.

Seen on a real X screen (Xvfb, xcb): a window shrunk to its least size and grown back came back with the grid a px
narrower and 31 px taller than fresh (its heads wrapped, a px of width is a px of every tile's side). The share was
set inside the splitter's Resize event, and QSplitter then shared its new width out in the old proportions.
Expectation: at a width met again, the splitter's sizes are the ones it had there first, whatever came between.
"""
from __future__ import annotations

from explorer.app.panels.attention import AttentionPanel
from explorer.app.state.session import Session
from tests.app.screen_fit import settle
from tests.app.synthetic_trace import build_trace


def test_the_grids_share_at_a_width_is_the_same_after_any_other_widths(qtbot):
    trace = build_trace(n_layers=30, n_heads=9, n_kv_heads=3, prompt_len=12, steps=0)
    session = Session()
    session.set_model(trace.model)
    panel = AttentionPanel(session)
    qtbot.addWidget(panel)
    panel.resize(640, 480)
    panel.show()
    qtbot.waitExposed(panel)
    session.set_trace(trace)
    qtbot.waitUntil(lambda: panel.mosaic is not None)
    settle(0.5)
    first = {}
    for width in (640, 980, 420, 333, 1200, 640, 421, 980, 333, 640):
        panel.resize(width, 480)
        settle(0.3)
        sizes = panel.splitter.sizes()
        first.setdefault(width, sizes)
        assert sizes == first[width], f"at {width} px the splitter is {sizes}, first {first[width]}"
