"""The Next token panel in a real window: its candidates and the top-k before the experiments keep their
probabilities and bars in sight at 1366x768 and 1920x1080, and the logit lens's caption goes with the lens."""
from __future__ import annotations

import pytest
from PySide6.QtCore import QSize

from tests.app.journey import BUNDLED, journey_in_a_window


def test_closing_the_logit_lens_takes_its_caption_away(qtbot, tmp_path, monkeypatch):
    """Next token ▸ Logit lens, then Back to the candidates: the caption "logit lens at position 2: ... after
    each layer" stayed under the candidates, naming a table no longer shown."""
    with journey_in_a_window(qtbot, tmp_path, monkeypatch, QSize(1920, 1080)) as journey:
        journey.open(BUNDLED / "shakespeare-gqa", "To be, or not to be")
        panel = journey.raise_panel("next_token")
        journey.act("logit lens", panel.lens_button.click)
        assert panel.lens_table.isVisibleTo(panel) and "lens" in panel.readout.text()
        journey.act("back to the candidates", panel.lens_button.click)
        assert panel.table.isVisibleTo(panel) and not panel.lens_table.isVisibleTo(panel)
        assert "lens" not in panel.readout.text(), f"the candidates sit above {panel.readout.text()!r}"


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


def test_the_probability_bars_are_never_cut_at_the_view_edge(qtbot, tmp_path, monkeypatch):
    """Gemma's longer tokens beside the before table at 1366x768 left the bars' column partly in sight: cut at
    the view's edge, p = 0.23 and p = 0.13 drew the same length. A narrower dock stands in for longer tokens."""
    with journey_in_a_window(qtbot, tmp_path, monkeypatch, QSize(1366, 768)) as journey:
        journey.open(BUNDLED / "shakespeare-gqa", "To be, or not to be")
        experiments = journey.raise_panel("experiments")
        journey.act("ablating a head", lambda: experiments.add(experiments._add_ablation()))
        panel = journey.raise_panel("next_token")
        qtbot.waitUntil(lambda: panel.before_table.isVisible(), timeout=20000)
        dock = journey.window.docks["next_token"]
        for width in (330, 300, 280, 260, 240):
            dock.setMaximumWidth(width)
            journey.idle("laying out")
            table, header = panel.table, panel.table.horizontalHeader()
            if table.isColumnHidden(4):
                continue
            right = header.sectionViewportPosition(4) + header.sectionSize(4)
            assert header.sectionViewportPosition(4) >= 0 and right <= table.viewport().width(), \
                f"the bars' column spans {header.sectionViewportPosition(4)}..{right} px of a " \
                f"{table.viewport().width()} px view (dock {dock.width()} px)"
        dock.setMaximumWidth(16777215)                    # widened again, the bars come back
        dock.setMinimumWidth(500)
        journey.idle("laying out")
        assert not panel.table.isColumnHidden(4), f"no bars in a {panel.table.viewport().width()} px view"
