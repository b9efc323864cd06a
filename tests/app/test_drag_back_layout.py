"""A window dragged narrower step by step and back to the size it was laid out at gives the layout back: at
1366x768 beside Learn the left column stayed 380 px wide where Reset Layout makes it 330, and the all-heads grid
dropped to one sideways-scrolling row of 9 heads (drive28 F2). Expectation, from the widgets' own geometry: the
left column's width and the grid's scroll area are those after Reset Layout, within a few px."""
from __future__ import annotations

import pytest

from explorer.app.window.dock_shares import left_column
from tests.app.screen_fit import SCREENS, settle
from tests.app.smollm2_window import SMOLLM2, grid_at
from tests.app.test_layout_shrink_plots import reset_layout
from tests.app.window_helpers import idle

pytestmark = [pytest.mark.usefixtures("store_home"), pytest.mark.realmodel]


def widths(window, panel) -> tuple[int, int]:
    return max(dock.width() for dock in left_column(window)), panel.grid_scroll.width()


def test_a_window_dragged_narrower_and_back_gives_the_layout_back(qtbot, tmp_path):
    if SMOLLM2 is None:
        pytest.skip("smollm2-135m is not pulled")
    with grid_at(qtbot, tmp_path, SMOLLM2, "Hello there", SCREENS["1366x768"], with_learn=True) as (window, panel):
        reset_layout(window)
        idle(qtbot, window)
        settle(0.5)
        laid_out, before = window.size(), widths(window, panel)
        steps = list(range(laid_out.width(), 899, -60))
        for width in steps[1:] + steps[::-1]:
            window.resize(width, laid_out.height())
            settle(0.12)
        window.resize(laid_out)
        idle(qtbot, window)
        settle(0.5)
        after = widths(window, panel)
        assert abs(after[0] - before[0]) <= 4 and abs(after[1] - before[1]) <= 4, (before, after)
