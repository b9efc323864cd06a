"""The all-heads grid's colour bars stay beside its scroll area, never over its scroll bar, after the window is shrunk
and grown back (drive27 at 1366x768 beside Learn: after Reset Layout, 800 x 600 and back, the colour bars sat 31 px
left of where their row put them, over the grid's vertical scroll bar, with 26 of 30 layers below the fold and no bar
to reach them).

The grid's heads wrapped anew inside the row's layout pass (the scroll area resized), and the split shared out again
there laid the row out inside that pass, whose own stale placing of the colour bars came after. Expectation, from the
widgets' own geometry: the colour bars start where the scroll area ends, and its vertical bar has pixels in sight."""
from __future__ import annotations

import pytest

from tests.app.screen_fit import SCREENS, settle
from tests.app.smollm2_window import SMOLLM2, grid_at
from tests.app.test_layout_shrink_plots import reset_layout
from tests.app.window_helpers import idle

pytestmark = [pytest.mark.usefixtures("store_home"), pytest.mark.realmodel]


def legend_beside(panel) -> tuple[bool, dict]:
    scroll, legend = panel.grid_scroll, panel.legend_view
    bar = scroll.verticalScrollBar()
    facts = {"scroll": scroll.geometry().getRect(), "legend": legend.geometry().getRect(),
             "bar_max": bar.maximum(), "bar_seen": not bar.visibleRegion().isEmpty()}
    beside = legend.geometry().left() == scroll.geometry().right() + 1
    return beside and (bar.maximum() == 0 or facts["bar_seen"]), facts


@pytest.mark.parametrize("screen", ["1366x768", "1920x1080"])
def test_the_grid_legend_stays_beside_its_scroll_bar_after_a_shrink_and_a_regrow(qtbot, tmp_path, screen):
    if SMOLLM2 is None:
        pytest.skip("smollm2-135m is not pulled")
    with grid_at(qtbot, tmp_path, SMOLLM2, "Hello there", SCREENS[screen], with_learn=True) as (window, panel):
        reset_layout(window)
        idle(qtbot, window)
        settle(0.3)
        laid_out = window.size()
        ok, facts = legend_beside(panel)
        assert ok, f"after Reset Layout: {facts}"
        for round_trip in (1, 2):
            for size in ((800, 600), laid_out):
                window.resize(*size) if isinstance(size, tuple) else window.resize(size)    # QSize: laid_out
                idle(qtbot, window)
                settle(0.3)
            ok, facts = legend_beside(panel)
            assert ok, f"after regrow {round_trip}: {facts}"
