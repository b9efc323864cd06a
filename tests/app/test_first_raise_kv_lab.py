"""The KV lab's first raise (issue 22, "switching tabs never blocks for more than 100 ms"): the panel is built in
one turn of the event loop and its bytes-against-tokens plots are built and drawn on later ones, the same curves a
one-shot drawing gives; the what-if maps, hidden until a conversion gives a result, are not built for it."""
from __future__ import annotations

import numpy as np

from explorer.app.panels.kv_lab import KVLabPanel
from explorer.app.state.session import Session
from explorer.app.widgets.kv_plot import DTYPES, BytesPlot
from explorer.core import kv_variants as kv
from tests.app.synthetic_trace import build_trace


def drawn(plot: BytesPlot) -> list:
    """(dtype, name, x, y, pen width) of every curve of `plot`, in order, and its legend's names."""
    curves = [(dtype, item.variant_name, *item.getData(), item.opts["pen"].width())
              for dtype in DTYPES for item in plot.plots[dtype].listDataItems()]
    return curves + [label.text for _, label in plot.legend.items]


def test_the_first_raise_draws_the_curves_on_a_later_turn_and_the_same_as_at_once(qtbot):
    trace = build_trace(n_layers=4, n_heads=6, n_kv_heads=2, d_head=16, max_positions=4096)
    session = Session()
    session.set_model(trace.model)
    session.set_trace(trace)
    panel = KVLabPanel(session)
    qtbot.addWidget(panel)
    panel.resize(1200, 400)
    panel.show()                                            # built, shown and redrawn: the raise's own turn
    assert getattr(panel.variants_tab, "_plot", "built") is None, "the bytes plots were built in the raise's turn"
    assert not any(panel.plot.plots[dtype].listDataItems() for dtype in DTYPES), \
        "the curves were drawn in the raise's own turn"
    assert getattr(panel.what_if, "_heatmaps", "built") is None, "the hidden what-if maps were built"
    qtbot.waitUntil(lambda: not panel.plot.turns.running and bool(panel.plot.plots[DTYPES[-1]].listDataItems()),
                    timeout=5000)
    at_once = BytesPlot(titled=False)
    qtbot.addWidget(at_once)
    at_once.draw(kv.shape_from_info(trace.model), None, trace.model.name)
    ours, theirs = drawn(panel.plot), drawn(at_once)
    assert len(ours) == len(theirs) and len(ours) > len(DTYPES)
    for mine, one_shot in zip(ours, theirs):
        if isinstance(mine, tuple):
            assert mine[:2] == one_shot[:2] and mine[4] == one_shot[4]
            np.testing.assert_array_equal(mine[2], one_shot[2])
            np.testing.assert_array_equal(mine[3], one_shot[3])
        else:
            assert mine == one_shot


def test_a_drawing_asked_for_a_model_replaced_meanwhile_is_not_drawn(qtbot):
    small = build_trace(n_layers=2, n_heads=4, d_head=8, max_positions=512)
    large = build_trace(n_layers=6, n_heads=8, n_kv_heads=2, d_head=32, max_positions=8192)
    session = Session()
    session.set_model(small.model)
    panel = KVLabPanel(session)
    qtbot.addWidget(panel)
    panel.show()
    session.set_model(large.model)                          # before the first model's curves were drawn
    qtbot.waitUntil(lambda: bool(panel.plot.plots[DTYPES[0]].listDataItems()), timeout=5000)
    x, _ = panel.plot.plots[DTYPES[0]].listDataItems()[0].getData()
    assert x[-1] == large.model.max_positions


def test_a_later_drawing_draws_one_dtype_a_turn_and_ends_as_a_drawing_at_once(qtbot):
    """18 curves and their paint in one turn were the KV lab's longest freeze at 8,000 tokens: one dtype a turn."""
    shape = kv.shape_from_info(build_trace(n_layers=4, n_heads=6, n_kv_heads=2, d_head=16, max_positions=4096).model)
    plot, at_once = BytesPlot(titled=False), BytesPlot(titled=False)
    qtbot.addWidget(plot)
    qtbot.addWidget(at_once)
    plot.draw_later(shape, None, "m")
    plot.turns.pause()                                       # its turns run by hand, one at a time
    assert not any(plot.plots[dtype].listDataItems() for dtype in DTYPES)
    plot.turns.step()                                        # the curves' numbers and colours: nothing drawn yet
    assert not any(plot.plots[dtype].listDataItems() for dtype in DTYPES)
    for turn, dtype in enumerate(DTYPES):
        plot.turns.step()
        assert [bool(plot.plots[d].listDataItems()) for d in DTYPES] == [i <= turn for i in range(len(DTYPES))], \
            f"after turn {turn}: drawn {dtype} and only the ones before it"
    plot.turns.step()
    assert not plot.turns.running
    at_once.draw(shape, None, "m")
    for mine, one_shot in zip(drawn(plot), drawn(at_once), strict=True):
        if isinstance(mine, tuple):
            assert mine[:2] == one_shot[:2] and mine[4] == one_shot[4]
            np.testing.assert_array_equal(mine[3], one_shot[3])
        else:
            assert mine == one_shot
