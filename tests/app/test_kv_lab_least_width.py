"""The KV lab's first raise lays out no other dock of the window: in the real window at its launch layout on a
1366x768 screen, with Learn beside the panels and without, the lab fits the width its tab group already has (1019 /
618 px), so raising it resizes none of the docks around it. Its least width is its what-if controls' row (target,
steps, Convert and compare, Cancel, the bar and its words: 571 px), wider than the other tabs of its group ask
(~460 px): in the benches' 796 px window (Qt's own 800x800 offscreen screen) its first raise widened the group and
laid out every dock again (issue 22: a tab switch never blocks for more than 100 ms). A guard: it passed before."""
from __future__ import annotations

import pytest
from PySide6.QtWidgets import QDockWidget

from explorer.app.window.learn_placement import open_learn
from tests.app.journey import BUNDLED, journey_in_a_window
from tests.app.screen_fit import SCREENS

pytestmark = pytest.mark.usefixtures("store_home")   # the store in the test's folder


def geometries(window) -> dict[str, tuple]:
    """Each dock in sight (not a tab behind another), by name: its geometry in the window."""
    return {dock.objectName(): dock.geometry().getRect() for dock in window.findChildren(QDockWidget)
            if dock.isVisible() and not dock.visibleRegion().isEmpty()}


@pytest.mark.parametrize("learn", [True, False], ids=["learn", "no-learn"])
@pytest.mark.parametrize("screen", ["1366x768"])
def test_the_kv_lab_raised_fits_its_group_and_resizes_no_dock(qtbot, tmp_path, monkeypatch, screen, learn):
    with journey_in_a_window(qtbot, tmp_path, monkeypatch, SCREENS[screen]) as journey:
        journey.open(BUNDLED / "shakespeare-gqa", "To be, or not to be")
        if learn:
            journey.act("Learn opened, as on a first start", lambda: open_learn(journey.window))
        window = journey.window
        lab = window.docks["kv_lab"]
        group = [dock for dock in window.tabifiedDockWidgets(lab) if dock.isVisible()]
        assert group, "the KV lab shares its area with no tab: the test says nothing"
        front = next(dock for dock in group if not dock.visibleRegion().isEmpty())     # the tab in front
        room = front.widget().width()
        before = geometries(window)
        journey.act("the KV lab raised", lambda: journey.raise_panel("kv_lab"))
        panel = lab.widget()
        assert panel.minimumSizeHint().width() <= room, \
            f"the KV lab asks for {panel.minimumSizeHint().width()} px where its group has {room}"
        after = geometries(window)
        moved = {name: (before[name], after[name]) for name in before
                 if name in after and before[name] != after[name]}
        assert not moved, f"raising the KV lab laid out other docks again: {moved}"
