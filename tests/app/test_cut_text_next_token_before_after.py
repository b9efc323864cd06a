"""Next token's before/after tables in the real window at the 1366x768 launch layout, after an ablation is added and
compared in the Experiments dock (issue 22): each keeps at least 3 whole rows in sight, and every column is whole
in sight (seen on a bare X screen: about 2 rows of each, and the "after" table's p column cut at its edge).

Expectation: the window's own geometry. A row is in sight when its visual rectangle lies inside the table's
viewport; a column is whole when it lies inside the viewport and is at least as wide as its widest cell asks,
or its cells are elided with "…" with the whole text in their tooltip.
"""
from __future__ import annotations

import pytest

from explorer.core.intervention import HeadAblation, Intervention
from tests.app.journey import BUNDLED, journey_in_a_window
from tests.app.screen_fit import SCREENS
from tests.app.test_tokens_next_token_fit import PROMPT, rows_in_sight

pytestmark = pytest.mark.usefixtures("store_home")  # the store in the test's folder
ROWS_SEEN = 3


def cut_columns(table) -> dict:
    """The shown columns not whole in sight: {header: (x, width, asked, viewport width)}; a cell whose text is
    elided counts as whole where its tooltip holds the whole text."""
    cut, view = {}, table.viewport().width()
    for column in range(table.columnCount()):
        if table.isColumnHidden(column):
            continue
        x, width = table.columnViewportPosition(column), table.columnWidth(column)
        name = table.horizontalHeaderItem(column).text()
        header_asked = table.horizontalHeader().sectionSizeHint(column)
        asked = max(table.sizeHintForColumn(column), header_asked)
        tipped = all(table.item(row, column) is None or table.item(row, column).toolTip()
                     == table.item(row, column).text() for row in range(table.rowCount()))
        if x < 0 or x + width > view or (width < asked and not (tipped and width >= header_asked)):
            cut[name] = (x, width, asked, view)
    return cut


@pytest.mark.parametrize("larger", [0, 2], ids=["font", "font+2pt"])
def test_the_before_after_tables_keep_three_rows_and_whole_columns(qtbot, tmp_path, monkeypatch, larger):
    with journey_in_a_window(qtbot, tmp_path, monkeypatch, SCREENS["1366x768"]) as journey:
        panel = journey.window.docks["next_token"].widget()
        if larger:                          # a bare X screen's font is larger than the offscreen one
            font = panel.font()
            font.setPointSizeF(font.pointSizeF() + larger)
            panel.setFont(font)
        journey.open(BUNDLED / "translate-en-zh", PROMPT)      # its Tokens grew, and kept, a larger share
        journey.open(BUNDLED / "shakespeare-gqa", PROMPT)
        window = journey.window
        experiments = journey.raise_panel("experiments")
        journey.act("an ablation added", lambda: window.session.add_experiment(
            Intervention(ablations=(HeadAblation(0, 1),))))
        journey.act("Compare", experiments.compare_button.click)
        panel = window.docks["next_token"].widget()
        journey.act("Next token raised", lambda: journey.raise_panel("next_token"))     # the window still fits
        assert panel.before_table.isVisible() and panel.table.isVisible()
        for name, table in (("before", panel.before_table), ("after", panel.table)):
            seen = rows_in_sight(table)
            assert seen >= min(ROWS_SEEN, table.rowCount()), \
                f"the {name} table shows {seen} whole rows in {table.viewport().height()} px"
            assert not cut_columns(table), f"the {name} table cuts columns: {cut_columns(table)}"
