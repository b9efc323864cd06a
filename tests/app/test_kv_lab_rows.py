"""The KV lab on a 1366x768 screen: its variant table shows every kind of cache of a SmolLM2-shaped model
(MHA, the native GQA, MQA and the first MLA rank) whole, says how many rows more there are to scroll to
when some are out of sight, and the window stays within the screen.

The expectations are the rows' rectangles against the table's viewport, the kinds read from the rows'
own names and the screen's height: no size copied from the panel.
"""
from __future__ import annotations

from PySide6.QtWidgets import QApplication

from explorer.app.widgets.kv_lab_rows import hidden_rows
from tests.app.screen_fit import settle

KINDS = ("mha", "gqa", "mqa", "mla")


def test_every_kind_of_cache_is_in_sight_and_the_rest_is_named(projector_window):
    window = projector_window
    dock = window.docks["kv_lab"]
    dock.show()
    dock.raise_()
    settle(0.5)
    table = dock.widget().table
    names = [table.item(row, 0).text() for row in range(table.rowCount())]
    first_of_kind = [next(row for row, name in enumerate(names) if name.startswith(kind)) for kind in KINDS]
    viewport = table.viewport().height()
    out_of_sight = [row for row in range(table.rowCount())
                    if table.visualRect(table.model().index(row, 0)).bottom() >= viewport]
    assert not set(first_of_kind) & set(out_of_sight), (names, out_of_sight, viewport)
    hint = dock.widget().rows_hint
    if out_of_sight:
        assert hint.isVisible() and str(len(out_of_sight)) in hint.text(), hint.text()
    else:
        assert not hint.isVisible()
    assert hidden_rows(table) == out_of_sight
    screen = QApplication.primaryScreen().availableGeometry().height()
    assert window.frameGeometry().height() <= screen and window.minimumSizeHint().height() <= screen
