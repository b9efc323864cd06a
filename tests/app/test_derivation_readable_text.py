"""Show the work never squeezes its derivation's text below a readable width: the map gives up size first.

Seen at 1920x1080 (drive 19, M1): in the tall centre dock of a window grown from 1366 px (the panel about
1030 x 900 px) the text was a ~75 px column, one word a line ("(K/ V head 0)"), beside a ~740 px map and the q·k
bars. Expectation: at that room, at a tall narrow one (1000 x 1000) and at a short wide one, the text's viewport
is at least READABLE_CHARS average characters of the text's own font wide (QFontMetrics), and the map's view still
at least MIN_PLOT_PX each way.
"""
from __future__ import annotations

import pytest
from PySide6.QtGui import QFontMetrics

from explorer.app.window.learn_placement import open_learn
from tests.app.derivation_panel import derived_in_room
from tests.app.journey import BUNDLED, journey_in_a_window
from tests.app.screen_fit import MIN_PLOT_PX, SCREENS, emulated_screen, settle

pytestmark = pytest.mark.usefixtures("store_home")  # the store in the test's folder

READABLE_CHARS = 30
ROOMS = ((1030, 900), (1000, 1000), (1400, 520), (760, 900))


@pytest.fixture
def panel(qtbot, traced_llama):
    return derived_in_room(qtbot, traced_llama, (1366 - 360, 470))    # the bottom tabs' room at 1366, then grown


@pytest.mark.parametrize("room", ROOMS, ids=[f"{w}x{h}" for w, h in ROOMS])
def test_the_text_keeps_a_readable_width_and_the_map_its_least_view(panel, room):
    panel.resize(*room)
    settle(0.6)
    readable = READABLE_CHARS * QFontMetrics(panel.text.font()).averageCharWidth()
    viewport = panel.text.viewport()
    assert panel.text.isVisible() and viewport.width() >= readable, \
        f"at {room}: the text is {viewport.width()} px wide, {readable} px reads {READABLE_CHARS} characters"
    assert panel.view.isVisible(), f"at {room}: the map is given up"
    box = panel.map.plot.getViewBox().size()
    assert min(box.width(), box.height()) >= MIN_PLOT_PX, f"at {room}: the map's view is {box.width():.0f} x " \
        f"{box.height():.0f} px"


LONG_LABELS = "The melancholy Gloucester and Buckingham understand their conscience"   # rotated key labels ~10 chars


def test_the_text_stays_readable_in_the_tall_dock_of_a_window_grown_from_1366(qtbot, tmp_path, monkeypatch):
    """The drive's room: launched at 1366 x 768 with Learn open (the bottom tabs behind attention), a cell derived,
    the window grown to a 1920 x 1080 screen: Show the work is the whole centre column, about 1030 x 860 px."""
    with journey_in_a_window(qtbot, tmp_path, monkeypatch, SCREENS["1366x768"]) as journey:
        journey.act("Learn opened, as on a first start", lambda: open_learn(journey.window))
        journey.open(BUNDLED / "shakespeare-gqa", LONG_LABELS)
        journey.derive_a_cell()
        panel = journey.window.docks["derivation"].widget()
        with emulated_screen(SCREENS["1920x1080"]):
            journey.window.resize(SCREENS["1920x1080"])
            settle(1.0)
            journey.idle("grown to 1920 x 1080")
            settle(0.5)
            assert panel.height() >= 700, f"Show the work is {panel.width()} x {panel.height()}, not a tall dock"
            readable = READABLE_CHARS * QFontMetrics(panel.text.font()).averageCharWidth()
            assert panel.text.viewport().width() >= readable, \
                f"in a {panel.width()} x {panel.height()} panel the text is {panel.text.viewport().width()} px wide"
            box = panel.map.plot.getViewBox().size()
            assert min(box.width(), box.height()) >= MIN_PLOT_PX, f"the map's view is {box.width():.0f} x " \
                f"{box.height():.0f} px"
