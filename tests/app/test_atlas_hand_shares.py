"""The Head atlas keeps the shares a person dragged its splitter to (issue 22): its parts were shared out again at
every resize, so a drag was undone by the next one.

Expectation: the panel laid out side by side, the handle between the map and the list dragged with the mouse;
after the panel is resized (wider, then narrower, still side by side) each part's share of the splitter is the
share the drag left, within the rounding of a few px (the list held at its least width by Qt, the map and the
example then keep the ratio the drag left between them), and both plots' views stay at least MIN_PLOT_PX each way.
"""
from __future__ import annotations

import pytest
from PySide6.QtCore import QPoint, Qt
from PySide6.QtTest import QTest

from explorer.app.panels import atlas
from tests.app.screen_fit import MIN_PLOT_PX, settle
from tests.app.why_helpers import answered

ROUNDING_PX = 3


def shares(splitter) -> list[float]:
    sizes = splitter.sizes()
    return [px / sum(sizes) for px in sizes]


def drag_handle(splitter, index: int, by: int) -> None:
    """Press the handle before part `index`, move it `by` px along the splitter, and let go, as a person does."""
    handle = splitter.handle(index)
    middle = handle.rect().center()
    QTest.mousePress(handle, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, middle)
    for step in range(1, 11):
        QTest.mouseMove(handle, middle + QPoint(by * step // 10, 0))
    QTest.mouseRelease(handle, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, middle + QPoint(by, 0))


def test_a_dragged_atlas_splitter_keeps_its_shares_at_later_resizes(qtbot, session, traced_llama):
    panel = answered(qtbot, atlas.AtlasPanel, session, traced_llama)
    qtbot.waitUntil(lambda: panel.values is not None, timeout=10000)
    panel.resize(1300, 520)
    settle(0.5)
    splitter = panel.splitter
    assert splitter.orientation() == Qt.Orientation.Horizontal, "the atlas is not side by side at 1300x520"
    before = splitter.sizes()
    drag_handle(splitter, 2, -60)                    # the example wider, the list narrower
    settle(0.3)
    dragged = splitter.sizes()
    assert dragged[2] >= before[2] + 40, f"the drag did not move the handle: {before} -> {dragged}"
    kept = shares(splitter)
    for width in (1600, 1150):
        panel.resize(width, 520)
        settle(0.5)
        assert splitter.orientation() == Qt.Orientation.Horizontal
        room = sum(splitter.sizes())
        expected = [round(share * room) for share in kept]
        sizes, least_list = splitter.sizes(), panel.table.minimumSizeHint().width()
        message = f"at {width} px the parts are {sizes}, the dragged shares ask for {expected}"
        if sizes[1] > least_list:
            assert all(abs(px - want) <= ROUNDING_PX for px, want in zip(sizes, expected)), message
        else:
            assert sizes[0] / sizes[2] == pytest.approx(dragged[0] / dragged[2], rel=0.02), message
        for plot in (panel.map.plot, panel.example.plot):
            box = plot.getViewBox().sceneBoundingRect()
            assert min(box.width(), box.height()) >= MIN_PLOT_PX, f"a view is {box.width()}x{box.height()} px"
