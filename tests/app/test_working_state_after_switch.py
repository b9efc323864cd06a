"""A panel still working on a new model shows nothing of the model before (drive 19, M3): right after a switch
from a 5-layer to a 2-layer model (and back), while the new model's job is asked and not yet answered, the
Why this token kept the old parts' names (MLP 3, L4.H2…) and axis under "attributing…".

The check runs inside the session's context_changed, just after the panels took the new trace and asked their
jobs: no answer can have come (answers come through the event loop), so the panel is in its working state.
Expectation: the two models' layer counts, from their config.json, and the old scores' own range.
"""
from __future__ import annotations

import json
from pathlib import Path

import pyqtgraph as pg
import pytest
import transformers  # noqa: E402,F401  (the tiny model is written with it; missing, the run fails, never skips)

from tests.app.tiny_model import make_tiny_llama
from tests.app.window_helpers import idle, new_window

pytestmark = pytest.mark.usefixtures("store_home")

PROMPT = "To be, or not to be, that is"


def layers_of(folder: Path) -> int:
    return int(json.loads((folder / "config.json").read_text())["num_hidden_layers"])


def raised(qtbot, window, name):
    dock = window.docks[name]
    dock.show()
    dock.raise_()
    panel = dock.widget()
    qtbot.waitUntil(panel.is_shown, timeout=10000)
    return panel


def open_and_watch(qtbot, window, folder: Path, look) -> list:
    """Open `folder` and call `look()` inside context_changed once the new model's trace is there; its findings."""
    seen = []

    def on_context(_change) -> None:
        trace = window.session.trace
        if not seen and trace is not None and trace.model.name == window.controller.summary.name:
            seen.append(look())
    window.session.context_changed.connect(on_context)
    try:
        window.open_model(str(folder))
        idle(qtbot, window, lambda: bool(seen))
    finally:
        window.session.context_changed.disconnect(on_context)
    return seen


def layer_labels(table) -> list[str]:
    """The residual table's layer labels: its column headers across, its row headers down."""
    across = table.horizontalHeaderItem(0) is None or table.horizontalHeaderItem(0).text().startswith("L")
    count, item = (table.columnCount(), table.horizontalHeaderItem) if across else \
        (table.rowCount(), table.verticalHeaderItem)
    return [item(i).text() if item(i) is not None else str(i + 1) for i in range(count)]


def plots_shown(panel) -> list[pg.PlotItem]:
    return [item for view in panel.findChildren(pg.GraphicsView) if view.isVisibleTo(panel)
            for item in view.scene().items() if isinstance(item, pg.PlotItem) and item.isVisible()]


def residual_look(panel, old_layers: int):
    def look():
        plots = [(plot.getViewBox().viewRange()[0], [c.getData()[0] for c in plot.listDataItems()])
                 for plot in plots_shown(panel) if panel.body_widget.isVisibleTo(panel)]
        labels = layer_labels(panel.table) if panel.body_widget.isVisibleTo(panel) else []
        return dict(working=panel.asker.busy, kind=panel.drawn().kind, note=panel.note.text(),
                    note_shown=panel.note.isVisibleTo(panel), labels=labels, plots=plots, old=old_layers)
    return look


def bars_labels(panel) -> list[str]:
    """The names on the bars' left axis (pyqtgraph's set ticks), as drawn."""
    ticks = panel.bars.getAxis("left")._tickLevels or []
    return [name for level in ticks for _, name in level]


def test_why_this_token_names_no_part_of_the_model_before_while_it_attributes(qtbot, tmp_path, dialogs):
    five, two = make_tiny_llama(tmp_path / "five", n_layers=5), make_tiny_llama(tmp_path / "two", seed=1, n_layers=2)
    window = new_window(qtbot, tmp_path)
    window.resize(1400, 900)
    try:
        window.prompt.set_text(PROMPT)
        for old, new in ((None, five), (five, two), (two, five)):
            panel = raised(qtbot, window, "attribution")
            if old is None:
                window.open_model(str(new))
            else:
                def look():
                    body = panel.body_widget.isVisibleTo(panel)
                    bar = panel.heads.colorbar
                    return dict(working=panel.asker.busy, readout=panel.readout.text(),
                                labels=bars_labels(panel) if body else [],
                                rows=list(panel.heads.axes["left"]._labels) if body else [],
                                values=body and panel.bars.getAxis("bottom").style["showValues"],
                                bar_shown=body and bar is not None and bar.isVisible())
                seen = open_and_watch(qtbot, window, new, look)[0]
                assert seen["working"], "the new model's attribution was not being computed"
                old_parts = {f"MLP {layer}" for layer in range(layers_of(new), layers_of(old))} | \
                    {f"L{layer}" for layer in range(layers_of(new), layers_of(old))}
                named = {label.split(".")[0] for label in seen["labels"] + seen["rows"]} | set(seen["labels"])
                assert not old_parts & named, seen
                assert not seen["bar_shown"], seen
                assert not seen["values"], seen           # the bars' axis spanned the old answer's parts
                assert "attributing" in seen["readout"], seen
            trace = idle(qtbot, window, lambda: window.session.trace is not None)
            window.session.select(token=trace.n_tokens - 2)
            idle(qtbot, window, lambda: panel.result is not None)
            assert panel.result.heads.shape[0] == layers_of(new)
            assert list(panel.heads.axes["left"]._labels) == [f"L{layer}" for layer in range(layers_of(new))]
            assert panel.heads.colorbar.isVisible() and panel.bars.getAxis("bottom").style["showValues"]
        assert not dialogs["warnings"], dialogs["warnings"]
    finally:
        window.close()
