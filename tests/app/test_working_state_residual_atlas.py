"""Residual stream and Head atlas show nothing of the model before while they work on a new one (issue 22, M3):
right after a switch from a 5-layer to a 2-layer model (and back), while the new model's stream is read and its
heads are scored, the Residual stream drew "reading…" over the old model's axis (layers 0…4) and table (L0…L4),
and the Head atlas kept the old scores' colour bar under "scoring every head…".

The check runs inside the session's context_changed, just after the panels took the new trace and asked their
jobs (tests/app/model_switch.py): no answer can have come, so each panel is in its working state.
Expectation: the two models' layer counts, from their config.json, and the old scores' own range; and, once the
answer came, the new model's layers and scores drawn.
"""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
import pytest
import transformers  # noqa: E402,F401  (the tiny model is written with it; missing, the run fails, never skips)

from tests.app.model_switch import layers_of, switches, two_depths
from tests.app.window_helpers import idle

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


def residual_look(panel) -> dict:
    """What the Residual stream draws along the layers: its readout, the table's layer labels, the plots' axes."""
    return dict(working=panel.asker.busy, readout=panel.readout.text(),
                labels=layer_labels(panel.table) if panel.body_widget.isVisibleTo(panel) else [],
                plots=[layers_axis(plot) for plot in plots_drawn(panel)])


def test_the_residual_stream_draws_no_layer_of_the_model_before_while_it_reads(qtbot, tmp_path, dialogs):
    with two_depths(qtbot, tmp_path, dialogs) as (window, five, two):
        for switch in switches(qtbot, window, "residual", (five, two, five), residual_look):
            panel, seen, n_new = switch.panel, switch.seen, layers_of(switch.new)
            if switch.old is not None:
                n_old = layers_of(switch.old)
                assert seen["working"], "the new model's stream was not being read"
                assert "reading the residual stream" in seen["readout"], seen      # it says what it does
                assert not {f"L{layer}" for layer in range(n_new, n_old)} & set(seen["labels"]), seen
                assert len(seen["labels"]) in (0, n_new), seen
                for drawn in seen["plots"]:
                    assert not np.allclose(drawn["x_range"], (-0.5, n_old - 0.5)), seen      # the old layers' span
                    assert not [t for t in drawn["ticks"] if n_new <= t < n_old], seen
                    assert all(max(xs, default=0) < n_new for xs in drawn["xs"]), seen
            window.session.select(token=switch.trace.n_tokens - 2)
            idle(qtbot, window, lambda: panel.stream is not None)
            assert len(panel.stream.residual_norms) == n_new
            assert layer_labels(panel.table) == [f"L{layer}" for layer in range(n_new)]
            for drawn in [layers_axis(plot) for plot in plots_drawn(panel)]:
                assert np.allclose(drawn["x_range"], (-0.5, n_new - 0.5)), drawn
                assert drawn["ticks"] and max(drawn["ticks"]) <= n_new - 1, drawn


def atlas_look(panel) -> dict:
    """What the Head atlas draws: its caption, the colour bar and its levels, the map's rows, the list, the
    example pattern."""
    bar, example = panel.map.colorbar, panel.example
    return dict(working=panel.asker.busy, caption=panel.caption.text(),
                bar_shown=bar is not None and bar.isVisible(),
                levels=tuple(bar.levels()) if bar is not None else None,
                rows=list(panel.map.axes["left"]._labels), listed=panel.table.rowCount(),
                pattern=example.image.image is not None and example.image.isVisible(),
                map=panel.map.image.image is not None)


def test_the_head_atlas_draws_no_colour_bar_or_pattern_of_the_model_before_while_it_scores(qtbot, tmp_path,
                                                                                             dialogs):
    with two_depths(qtbot, tmp_path, dialogs) as (window, five, two):
        old_levels = None
        for switch in switches(qtbot, window, "atlas", (five, two, five), atlas_look):
            panel, seen = switch.panel, switch.seen
            if switch.old is not None:
                assert seen["working"], "the new model's heads were not being scored"
                assert "scoring every head" in seen["caption"], seen                # it says what it does
                assert not (seen["bar_shown"] and np.allclose(seen["levels"], old_levels)), (seen, old_levels)
                assert not seen["bar_shown"], seen
                assert not seen["rows"] and seen["listed"] == 0 and not seen["pattern"] and not seen["map"], seen
            idle(qtbot, window, lambda: panel.values is not None and panel.scores is not None)
            assert panel.values.shape[0] == layers_of(switch.new)
            assert list(panel.map.axes["left"]._labels) == [f"L{layer}" for layer in range(layers_of(switch.new))]
            bar = panel.map.colorbar
            assert bar.isVisible()
            finite = panel.values[np.isfinite(panel.values)]
            assert np.allclose(bar.levels(), (finite.min(), finite.max()), atol=1e-6)
            old_levels = (float(finite.min()), float(finite.max()))
