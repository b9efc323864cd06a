"""Residual stream: growing the panel until its plot appears leaves every table row whole (issue 22).

Below the plot's room the table's rows stretch to share the panel's height; once the plot has room the table's
height is fixed to its header and rows of the font's height. Rows that kept their stretched height inside that
fixed table were cut (the last ones half shown, behind a scroll bar). Expectation, from the table's own geometry:
every row the table has lies whole inside its viewport.
"""
from __future__ import annotations

from tests.app.deep_residual import deep_llama, residual_stream_shown  # noqa: F401  (deep_llama: the fixture)


def test_growing_the_panel_until_its_plot_shows_cuts_no_row(qtbot, deep_llama):  # noqa: F811
    n_layers = deep_llama[2]
    panel = residual_stream_shown(qtbot, deep_llama, (1000, 150))     # under the plot's least height: the table alone
    qtbot.wait(200)
    assert len(panel.stream.lens_ids) == n_layers
    assert not panel.plot_view.isVisible(), "the test's small panel already shows the plot"
    panel.resize(1000, 700)
    qtbot.waitUntil(lambda: panel.plot_view.isVisible(), timeout=5000)
    qtbot.wait(200)
    table = panel.table
    viewport = table.viewport().height()
    last = table.rowCount() - 1
    bottom = table.rowViewportPosition(last) + table.rowHeight(last)
    assert bottom <= viewport, f"rows end at {bottom} px in a {viewport} px viewport: the last ones are cut"
    for row in range(table.rowCount()):
        top = table.rowViewportPosition(row)
        assert top >= 0 and top + table.rowHeight(row) <= viewport, (row, top, table.rowHeight(row), viewport)
