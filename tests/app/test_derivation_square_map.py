"""Show the work's map keeps square-ish cells of at least MIN_PLOT_PX each way in every placement, and its layout
is a function of the panel's size alone (issue 22).

Seen: at 1366x768, after the window was shrunk to its least size and grown back, the map was ~118 px tall under a
q·k chart where it had been 360 px; at 1920x1080 the panel laid map, chart and text side by side and the map was a
~260 x 900 px column of oblong cells. Measured here: the map's image as drawn on screen, its cells' width over
their height, before a shrink to the window's least size, after the regrow and with the panel maximised, at both
emulated screens.
"""
from __future__ import annotations

import pytest
from PySide6.QtCore import QRectF

from tests.app.journey import BUNDLED, journey_in_a_window
from tests.app.screen_fit import MIN_PLOT_PX, SCREENS, settle, steady

pytestmark = pytest.mark.usefixtures("store_home")  # the store in the test's folder

PROMPT = "To be, or not to be, that is the question"
SQUARE_ISH = 1.5             # a cell at most this much wider than tall, or taller than wide
SPLIT_SLACK = 0.01           # a split that comes back within 1% of its whole has come back


def drawn_map(panel) -> QRectF:
    """The map's image as drawn, in the panel's view's pixels, cut to its ViewBox."""
    view = panel.view
    box = view.mapFromScene(panel.map.plot.getViewBox().sceneBoundingRect()).boundingRect()
    image = view.mapFromScene(panel.map.image.sceneBoundingRect()).boundingRect()
    return QRectF(image).intersected(QRectF(box))


def layout_of(panel) -> tuple:
    """What a person sees of the panel's arrangement."""
    return (panel.splitter.orientation(), tuple(panel.splitter.sizes()), panel.plots.isVisible(),
            panel.products_view.isVisible(), panel.plots.orientation(), tuple(panel.plots.sizes()))


def same_layout(before: tuple, after: tuple) -> bool:
    """The same arrangement, each split within SPLIT_SLACK of its whole: a person sees no 4 px shift of a 1,430 px
    panel (one was seen at 1920 in a fresh-clone run, the window's thread lagging under another test process),
    and the fault this checks gave the regrow to another part, hundreds of px."""
    def sizes_near(one: tuple, other: tuple) -> bool:
        slack = SPLIT_SLACK * max(sum(one), 1)
        return len(one) == len(other) and all(abs(a - b) <= slack for a, b in zip(one, other))
    return (before[0], before[2:5]) == (after[0], after[2:5]) and sizes_near(before[1], after[1]) \
        and sizes_near(before[5], after[5])


def stable_layout(panel) -> tuple:
    """The panel's layout once it has not changed for a while: a job's late result may lay it out again."""
    return steady(lambda: layout_of(panel))


def check_map(panel, where: str) -> None:
    assert panel.view.isVisible(), f"{where}: the map is given up"
    rows, columns = panel.map.shape
    drawn = drawn_map(panel)
    assert min(drawn.width(), drawn.height()) >= MIN_PLOT_PX, f"{where}: the map is drawn {drawn.width():.0f} x " \
        f"{drawn.height():.0f} px"
    cell = (drawn.width() / columns) / (drawn.height() / rows)
    assert 1 / SQUARE_ISH <= cell <= SQUARE_ISH, \
        f"{where}: cells {drawn.width() / columns:.1f} x {drawn.height() / rows:.1f} px ({drawn.width():.0f} x " \
        f"{drawn.height():.0f} px for {rows} x {columns})"


@pytest.mark.parametrize("screen", list(SCREENS))
def test_the_map_stays_square_and_its_layout_comes_back_after_a_shrink_and_a_regrow(qtbot, tmp_path, monkeypatch,
                                                                                     screen):
    size = SCREENS[screen]
    with journey_in_a_window(qtbot, tmp_path, monkeypatch, size) as journey:
        journey.open(BUNDLED / "shakespeare-gqa", PROMPT)
        journey.derive_a_cell()
        window, panel = journey.window, journey.window.docks["derivation"].widget()
        before = stable_layout(panel)
        check_map(panel, f"{screen}, opened")
        window.resize(window.minimumSizeHint())
        settle(1.0)
        if panel.view.isVisible():
            check_map(panel, f"{screen}, at the window's least size")
        window.resize(size)
        settle(1.0)
        check_map(panel, f"{screen}, grown back")
        assert same_layout(before, stable_layout(panel)), \
            f"{screen}: laid out {before} before the shrink, {layout_of(panel)} after"
        window.dock_shares.toggle_maximised(window.docks["derivation"])      # the whole window: a tall, wide room
        settle(1.0)
        check_map(panel, f"{screen}, maximised")
        window.dock_shares.toggle_maximised(window.docks["derivation"])
        settle(1.0)
        assert same_layout(before, stable_layout(panel)), \
            f"{screen}: laid out {before} before maximising, {layout_of(panel)} after"
