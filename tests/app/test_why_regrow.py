"""Why this token lays itself out anew when it grows again: shrunk to a small dock (the window's least size) and
grown back, it showed "the 3 largest parts" where one built at the large size shows 12, and its text column kept
half the dock (drive21 m17). The expectation is a panel built at the large size, not a count from the code."""
from __future__ import annotations

from explorer.app.panels.attribution import AttributionPanel
from tests.app.screen_fit import settle
from tests.app.why_helpers import answered

LARGE, SMALL = (1500, 600), (420, 260)


def laid_out(panel) -> tuple[str, int]:
    """The bars' title (it names how many parts are drawn) and the text column's width."""
    return panel.bars.titleLabel.text, panel.splitter.sizes()[0]


def test_grown_again_the_panel_is_laid_out_as_one_built_large(qtbot, session, traced_llama):
    panel = answered(qtbot, AttributionPanel, session, traced_llama, "wide")
    panel.resize(*LARGE)
    settle(0.5)
    expected = laid_out(panel)                               # as built at the large size
    assert "the 3 " not in expected[0], expected             # the large size holds more than the least of bars
    panel.resize(*SMALL)
    settle(0.5)
    assert laid_out(panel) != expected                       # the small size lays it out otherwise
    panel.resize(*LARGE)
    settle(0.5)
    assert laid_out(panel) == expected
