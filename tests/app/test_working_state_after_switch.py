"""A panel still working on a new model shows nothing of the model before (drive 19, M3): right after a switch
from a 5-layer to a 2-layer model (and back), while the new model's job is asked and not yet answered, the
Why this token kept the old parts' names (MLP 3, L4.H2…) and axis under "attributing…".

The check runs inside the session's context_changed, just after the panels took the new trace and asked their
jobs (tests/app/model_switch.py): no answer can have come, so the panel is in its working state.
Expectation: the two models' layer counts, from their config.json, and the old scores' own range.
"""
from __future__ import annotations

import pytest
import transformers  # noqa: E402,F401  (the tiny model is written with it; missing, the run fails, never skips)

from tests.app.model_switch import layers_of, switches, two_depths
from tests.app.window_helpers import idle

pytestmark = pytest.mark.usefixtures("store_home")


def bars_labels(panel) -> list[str]:
    """The names on the bars' left axis (pyqtgraph's set ticks), as drawn."""
    ticks = panel.bars.getAxis("left")._tickLevels or []
    return [name for level in ticks for _, name in level]


def attribution_look(panel) -> dict:
    """What Why this token draws of the parts: the bars' names, the heads' rows, the axis values, the colour bar."""
    body = panel.body_widget.isVisibleTo(panel)
    bar = panel.heads.colorbar
    return dict(working=panel.asker.busy, readout=panel.readout.text(),
                labels=bars_labels(panel) if body else [],
                rows=list(panel.heads.axes["left"]._labels) if body else [],
                values=body and panel.bars.getAxis("bottom").style["showValues"],
                bar_shown=body and bar is not None and bar.isVisible())


def test_why_this_token_names_no_part_of_the_model_before_while_it_attributes(qtbot, tmp_path, dialogs):
    with two_depths(qtbot, tmp_path, dialogs) as (window, five, two):
        for switch in switches(qtbot, window, "attribution", (five, two, five), attribution_look):
            panel, seen = switch.panel, switch.seen
            if switch.old is not None:
                assert seen["working"], "the new model's attribution was not being computed"
                gone = range(layers_of(switch.new), layers_of(switch.old))
                old_parts = {f"MLP {layer}" for layer in gone} | {f"L{layer}" for layer in gone}
                named = {label.split(".")[0] for label in seen["labels"] + seen["rows"]} | set(seen["labels"])
                assert not old_parts & named, seen
                assert not seen["bar_shown"], seen
                assert not seen["values"], seen           # the bars' axis spanned the old answer's parts
                assert "attributing" in seen["readout"], seen
            window.session.select(token=switch.trace.n_tokens - 2)
            idle(qtbot, window, lambda: panel.result is not None)
            n_new = layers_of(switch.new)
            assert panel.result.heads.shape[0] == n_new
            assert list(panel.heads.axes["left"]._labels) == [f"L{layer}" for layer in range(n_new)]
            assert panel.heads.colorbar.isVisible() and panel.bars.getAxis("bottom").style["showValues"]
