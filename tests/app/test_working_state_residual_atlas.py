"""Residual stream and Head atlas show nothing of the model before while they work on a new one (issue 22, M3):
right after a switch from a 5-layer to a 2-layer model (and back), while the new model's stream is read and its
heads are scored, the Residual stream drew "reading…" over the old model's axis (layers 0…4) and table (L0…L4),
and the Head atlas kept the old scores' colour bar under "scoring every head…".

The check runs inside the session's context_changed, just after the panels took the new trace and asked their
jobs: no answer can have come (answers come through the event loop), so each panel is in its working state.
Expectation: the two models' layer counts, from their config.json, and the old scores' own range; and, once the
answer came, the new model's layers and scores drawn.
"""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
import pytest
import transformers  # noqa: E402,F401  (the tiny model is written with it; missing, the run fails, never skips)

from tests.app.test_working_state_after_switch import PROMPT, layers_of, open_and_watch, raised
from tests.app.tiny_model import make_tiny_llama
from tests.app.window_helpers import idle, new_window

pytestmark = pytest.mark.usefixtures("store_home")


def layer_labels(table) -> list[str]:
    """The residual table's layer labels (L…): its column headers across, its row headers down."""
    headers = [table.horizontalHeaderItem(i) for i in range(table.columnCount())] + \
        [table.verticalHeaderItem(i) for i in range(table.rowCount())]
    return [item.text() for item in headers if item is not None and item.text().startswith("L")]


def plots_drawn(panel) -> list[pg.PlotItem]:
    """The PlotItems a person sees in `panel`."""
    if not panel.body_widget.isVisibleTo(panel):
        return []
    return [item for view in panel.findChildren(pg.GraphicsView) if view.isVisibleTo(panel)
            for item in view.scene().items() if isinstance(item, pg.PlotItem) and item.isVisible()]


def layers_axis(plot: pg.PlotItem) -> dict:
    """What `plot` draws along its layers: the x range, the bottom axis's tick values (when it shows them) and the
    x of every curve."""
    (x0, x1), axis = plot.getViewBox().viewRange()[0], plot.getAxis("bottom")
    shown = axis.isVisible() and axis.style["showValues"]
    ticks = [value for _, values in axis.tickValues(x0, x1, max(1.0, axis.width())) for value in values] \
        if shown else []
    return dict(x_range=(x0, x1), ticks=ticks, xs=[list(c.getData()[0]) for c in plot.listDataItems()
                                                     if c.getData()[0] is not None])


def test_the_residual_stream_draws_no_layer_of_the_model_before_while_it_reads(qtbot, tmp_path, dialogs):
    five, two = make_tiny_llama(tmp_path / "five", n_layers=5), make_tiny_llama(tmp_path / "two", seed=1, n_layers=2)
    window = new_window(qtbot, tmp_path)
    window.resize(1400, 900)
    try:
        window.prompt.set_text(PROMPT)
        for old, new in ((None, five), (five, two), (two, five)):
            panel = raised(qtbot, window, "residual")
            if old is None:
                window.open_model(str(new))
            else:

                def look():
                    return dict(working=panel.asker.busy, readout=panel.readout.text(),
                                labels=layer_labels(panel.table) if panel.body_widget.isVisibleTo(panel) else [],
                                plots=[layers_axis(plot) for plot in plots_drawn(panel)])
                seen = open_and_watch(qtbot, window, new, look)[0]
                n_old, n_new = layers_of(old), layers_of(new)
                assert seen["working"], "the new model's stream was not being read"
                assert "reading the residual stream" in seen["readout"], seen      # it says what it does
                assert not {f"L{layer}" for layer in range(n_new, n_old)} & set(seen["labels"]), seen
                assert len(seen["labels"]) in (0, n_new), seen
                for drawn in seen["plots"]:
                    assert not np.allclose(drawn["x_range"], (-0.5, n_old - 0.5)), seen      # the old layers' span
                    assert not [t for t in drawn["ticks"] if n_new <= t < n_old], seen
                    assert all(max(xs, default=0) < n_new for xs in drawn["xs"]), seen
            trace = idle(qtbot, window, lambda: window.session.trace is not None)
            window.session.select(token=trace.n_tokens - 2)
            idle(qtbot, window, lambda: panel.stream is not None)
            n_new = layers_of(new)
            assert len(panel.stream.residual_norms) == n_new
            assert layer_labels(panel.table) == [f"L{layer}" for layer in range(n_new)]
            for drawn in [layers_axis(plot) for plot in plots_drawn(panel)]:
                assert np.allclose(drawn["x_range"], (-0.5, n_new - 0.5)), drawn
                assert drawn["ticks"] and max(drawn["ticks"]) <= n_new - 1, drawn
        assert not dialogs["warnings"], dialogs["warnings"]
    finally:
        window.close()


def test_the_head_atlas_draws_no_colour_bar_or_pattern_of_the_model_before_while_it_scores(qtbot, tmp_path,
                                                                                             dialogs):
    five, two = make_tiny_llama(tmp_path / "five", n_layers=5), make_tiny_llama(tmp_path / "two", seed=1, n_layers=2)
    window = new_window(qtbot, tmp_path)
    window.resize(1400, 900)
    try:
        window.prompt.set_text(PROMPT)
        panel = None
        for old, new in ((None, five), (five, two), (two, five)):
            if old is None:
                window.open_model(str(new))
            else:
                scores = panel.values[np.isfinite(panel.values)]
                old_levels = (float(scores.min()), float(scores.max()))

                def look():
                    bar, example = panel.map.colorbar, panel.example
                    return dict(working=panel.asker.busy, caption=panel.caption.text(),
                                bar_shown=bar is not None and bar.isVisible(),
                                levels=tuple(bar.levels()) if bar is not None else None,
                                rows=list(panel.map.axes["left"]._labels), listed=panel.table.rowCount(),
                                pattern=example.image.image is not None and example.image.isVisible(),
                                map=panel.map.image.image is not None)
                seen = open_and_watch(qtbot, window, new, look)[0]
                assert seen["working"], "the new model's heads were not being scored"
                assert "scoring every head" in seen["caption"], seen                # it says what it does
                assert not (seen["bar_shown"] and np.allclose(seen["levels"], old_levels)), (seen, old_levels)
                assert not seen["bar_shown"], seen
                assert not seen["rows"] and seen["listed"] == 0 and not seen["pattern"] and not seen["map"], seen
            panel = raised(qtbot, window, "atlas")
            idle(qtbot, window, lambda: panel.values is not None and panel.scores is not None)
            assert panel.values.shape[0] == layers_of(new)
            assert list(panel.map.axes["left"]._labels) == [f"L{layer}" for layer in range(layers_of(new))]
            bar = panel.map.colorbar
            assert bar.isVisible()
            finite = panel.values[np.isfinite(panel.values)]
            assert np.allclose(bar.levels(), (finite.min(), finite.max()), atol=1e-6)
        assert not dialogs["warnings"], dialogs["warnings"]
    finally:
        window.close()
