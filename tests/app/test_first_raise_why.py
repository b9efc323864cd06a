"""Why this token and Show the work raised for the first time (issue 22: no tab switch blocks for more than
100 ms) make their two plots, each 20-40 ms of pyqtgraph's building, in turns of the event loop of their own after
the raise's turn, not in the turn that builds the panel and raises it (120-138 and 76-161 ms at 8,000 tokens).
Counted, not timed: the PlotItems made (colour bars aside) in each turn, a turn ending where the panel's next part
is called. The plots built so then draw what the core computes: the attribution, the selected head's map."""
from __future__ import annotations

import numpy as np

from explorer.app.panels.attribution import AttributionPanel
from explorer.app.panels.base import Panel
from explorer.app.panels.derivation import DerivationPanel
from explorer.app.widgets.model_call import thread_executor
from tests.app.turn_counting import counting_turns
from tests.app.why_helpers import SIZES, shown


def raised_in_turns(qtbot, session, trace, cls, monkeypatch) -> tuple[Panel, list]:
    """A panel of `cls` built and shown for the first time with `trace`, its model jobs held; its plots made one
    a turn after the raise's turn."""
    made = counting_turns(monkeypatch)
    session.set_trace(trace)
    panel = cls(session)
    held = []
    panel.executor = held.append                    # the model's answers wait until the plots are made
    shown(qtbot, panel, SIZES["wide"])              # its first showing: a raise
    qtbot.waitUntil(lambda: not panel.drawing, timeout=5000)
    assert made[0] == 0, f"{made[0]} plots made in the panel's building and raising turn"
    assert sum(made.values()) == 2 and max(made.values()) == 1, f"plots made by turn: {dict(made)}"
    return panel, held


def test_why_this_token_makes_one_plot_a_turn_after_its_first_raise(qtbot, session, traced_llama, monkeypatch):
    from explorer.core.attribution import attribute

    loaded, trace = traced_llama
    panel, held = raised_in_turns(qtbot, session, trace, AttributionPanel, monkeypatch)

    assert held, "the attribution was not asked"
    thread_executor(loaded)(held.pop())
    qtbot.waitUntil(lambda: panel.result is not None, timeout=30000)
    expected = attribute(loaded, trace.token_ids, trace.n_tokens - 1)
    np.testing.assert_allclose(panel.heads.image.image,
                               np.concatenate([expected.heads, expected.mlp[:, None]], axis=1), rtol=1e-6)


def test_show_the_work_makes_one_plot_a_turn_after_its_first_raise_then_derives_the_cell(qtbot, session,
                                                                                        traced_llama, monkeypatch):
    _, trace = traced_llama
    session.select(layer=1, head=2, token=trace.n_tokens - 2)
    panel, _ = raised_in_turns(qtbot, session, trace, DerivationPanel, monkeypatch)
    assert panel.derived is not None, "the selected cell was not derived once the plots were made"
    shown = panel.map.image.image                   # the mask's cells drawn blank (NaN)
    np.testing.assert_allclose(np.nan_to_num(shown), trace.attention(1)[2], rtol=1e-6)


def test_why_this_token_caption_is_whole_in_a_narrow_side_column(qtbot, session, traced_llama):
    """Its caption is never cut (drive 15: '… Decomposition: pre-norm, the norm' on the MLA model at 1920 x 1080,
    'scales frozen here.' lost with room below): in a 200 px side column it is as tall as its text wrapped at its
    width, a QTextDocument of the same HTML and font laid out alone."""
    from PySide6.QtGui import QTextDocument

    from explorer.app.widgets.model_call import thread_executor

    loaded, trace = traced_llama
    panel = shown(qtbot, AttributionPanel(session), SIZES["wide"])
    panel.executor = thread_executor(loaded)
    session.set_trace(trace)
    qtbot.waitUntil(lambda: panel.result is not None, timeout=30000)
    panel.splitter.setSizes([200, SIZES["wide"][0] - 200])
    qtbot.wait(50)
    caption = panel.caption
    document = QTextDocument()
    document.setDocumentMargin(0)
    document.setDefaultFont(caption.document.defaultFont())
    document.setHtml(caption.document.toHtml())
    document.setTextWidth(caption.width() - 2 * caption.PADDING[0])
    assert caption.width() < 320
    assert caption.height() >= document.size().height(), \
        f"the caption is {caption.height()} px tall, its text {document.size().height()} px at {caption.width()} px"
