"""What driving the whole app on bare X screens (drive 11) found at the seams, checked where a person sees it."""
from __future__ import annotations

import pytest
from PySide6.QtCore import QSize

from tests.app.journey import BUNDLED, journey_in_a_window


@pytest.mark.parametrize("screen", [QSize(1366, 768), QSize(1920, 1080)])
def test_the_candidates_keep_their_probabilities_in_sight_beside_the_before_table(qtbot, tmp_path, monkeypatch,
                                                                                   screen):
    """With an experiment on, Next token shows the top-k without it beside the candidates. The two tables
    split the dock's width 2 : 3, so the candidates (rank, token, id, p, bar) scrolled sideways at both sizes:
    at 1366x768 the p column read "0.4" and no bar was in sight (gemma3-270m, an ablation on)."""
    with journey_in_a_window(qtbot, tmp_path, monkeypatch, screen) as journey:
        journey.open(BUNDLED / "shakespeare-gqa", "To be, or not to be")
        experiments = journey.raise_panel("experiments")
        experiments.layer_box.setValue(1)
        experiments.head_box.setValue(1)
        journey.act("ablating a head", lambda: experiments.add(experiments._add_ablation()))
        panel = journey.raise_panel("next_token")
        qtbot.waitUntil(lambda: panel.before_table.isVisible(), timeout=20000)
        journey.idle("laying out")
        for table in (panel.table, panel.before_table):
            header = table.horizontalHeader()
            last = table.columnCount() - 1
            right = header.sectionViewportPosition(last) + header.sectionSize(last)
            assert table.horizontalScrollBar().maximum() == 0 and right <= table.viewport().width(), \
                f"{table.horizontalHeaderItem(0).text()}: columns {right} px wide in a {table.viewport().width()} " \
                f"px view at {screen.width()}x{screen.height()}"
            assert table.viewport().height() >= 3 * table.rowHeight(0), \
                f"only {table.viewport().height()} px of rows at {screen.width()}x{screen.height()}"
