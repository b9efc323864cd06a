"""Show the work keeps the shares a person dragged its splitters to (issue 22): its plots and text were placed by
adaptive.square_placement, a function of the panel's size alone, so the next resize undid a drag.

Expectation: the handle between the plots and the text (and the one between the map and the q·k bars) dragged with
the mouse; after the panel is resized bigger and smaller, the same way round, each part's share of the splitter is
the share the drag left, within a few px of rounding; a drag that squeezed the map leaves it at least MIN_PLOT_PX
each way at the next resize. Without a drag the placement is the size's own (test_derivation_square_map).
"""
from __future__ import annotations

import time

import pytest
from PySide6.QtCore import QPoint, Qt
from PySide6.QtTest import QTest

from tests.app.derivation_panel import derived_in_room
from tests.app.screen_fit import MIN_PLOT_PX, settle

ROUNDING_PX = 3
FIRST_SIZE = (1100, 430)
RESIZES = ((1400, 560), (1000, 400))     # bigger, then smaller than the size dragged at, the same way round


@pytest.fixture
def panel(qtbot, traced_llama):
    return derived_in_room(qtbot, traced_llama, FIRST_SIZE)


def drag_handle(splitter, by: int) -> None:
    """Press the handle between the splitter's two parts, move it `by` px along the splitter, and let go (in one
    move: the handle follows the pointer, so a second move relative to it would count the first again)."""
    handle = splitter.handle(1)
    middle = handle.rect().center()
    step = QPoint(by, 0) if splitter.orientation() == Qt.Orientation.Horizontal else QPoint(0, by)
    QTest.mousePress(handle, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, middle)
    QTest.mouseMove(handle, middle + step)
    QTest.mouseRelease(handle, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, middle + step)
    settle(0.3)


def shares(splitter) -> list[float]:
    sizes = splitter.sizes()
    return [px / sum(sizes) for px in sizes]


def map_view(panel) -> tuple[float, float]:
    box = panel.map.plot.getViewBox().sceneBoundingRect()
    return box.width(), box.height()


def check_kept(panel, splitter, kept: list[float], where: str) -> None:
    room = sum(splitter.sizes())
    expected = [round(share * room) for share in kept]
    assert all(abs(px - want) <= ROUNDING_PX for px, want in zip(splitter.sizes(), expected)), \
        f"{where}: the parts are {splitter.sizes()}, the dragged shares ask for {expected}"
    assert min(map_view(panel)) >= MIN_PLOT_PX, f"{where}: the map's view is {map_view(panel)} px"


@pytest.mark.parametrize("which, by", [("splitter", 90), ("splitter", -70), ("plots", -40)])
def test_a_dragged_splitter_keeps_its_shares_at_later_resizes(qtbot, panel, which, by):
    splitter = getattr(panel, which)
    assert panel.products_view.isVisible(), "the q·k bars are not shown at the first size"
    orientation, before = splitter.orientation(), splitter.sizes()
    drag_handle(splitter, by)
    dragged = splitter.sizes()
    assert abs(dragged[0] - before[0] - by) <= ROUNDING_PX, f"the drag did not move the handle: {before} -> {dragged}"
    kept = shares(splitter)
    for width, height in RESIZES:
        panel.resize(width, height)
        settle(0.5)
        assert splitter.orientation() == orientation, f"at {width}x{height} the {which} turned"
        check_kept(panel, splitter, kept, f"{which} dragged {by} px, at {width}x{height}")


def test_a_drag_that_squeezes_the_map_leaves_it_its_least_at_the_next_resize(qtbot, panel):
    splitter = panel.splitter
    drag_handle(splitter, -splitter.sizes()[0])               # the plots all but shut
    # the plot lays its view out in its own time: a fresh-clone run beside another test process read it before that
    deadline = time.monotonic() + 10.0
    while min(map_view(panel)) >= MIN_PLOT_PX and time.monotonic() < deadline:
        settle(0.1)
    assert min(map_view(panel)) < MIN_PLOT_PX, f"the drag left the map {map_view(panel)} px"
    for width, height in RESIZES:
        panel.resize(width, height)
        settle(0.5)
        assert panel.view.isVisible() and min(map_view(panel)) >= MIN_PLOT_PX, \
            f"at {width}x{height} the map's view is {map_view(panel)} px"
