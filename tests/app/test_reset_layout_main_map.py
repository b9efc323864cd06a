"""View ▸ Reset Layout gives attention's map, the main view, the larger part of the height under the prompt, and
every plot a person can then raise stays legible (issue 22, item 13: "the main map gets about 300 px of height at
1920x1080").

Seen at 1920x1080: the bottom tabs had half the height under the prompt, and attention's map view 278 px of the
~900 px there; Residual stream's plot was 129 px tall in a 424 px dock, under a legend row of its own.
Expectation, on emulated 1366x768 and 1920x1080 screens (tests/app/screen_fit.py), after Reset Layout with a decoder
open: attention's map view at least MAP_SHARE of the height between the prompt's dock and the status bar (both read
from the window's geometry), and every plot a person sees at least MIN_PLOT_PX each way (Journey.act checks it)
with each bottom tab raised in turn, the Residual stream's plot among them at 1920x1080. At 1366x768 the bottom
tabs stay behind attention, which keeps the whole height.
"""
from __future__ import annotations

import pytest

from tests.app.journey import BUNDLED, journey_in_a_window
from tests.app.layout_probe import in_sight
from tests.app.screen_fit import SCREENS, settle
from tests.app.stress_window import reset_layout

pytestmark = pytest.mark.usefixtures("store_home")  # the store in the test's folder

PROMPT = "When Mary and John went to the store, John gave a drink to"
MAP_SHARE = 0.37           # of the height under the prompt, the map being the main view (it had 0.30)


def under_prompt_px(window) -> int:
    """The height between the prompt's dock and the status bar, as laid out."""
    return window.statusBar().geometry().top() - window.docks["prompt"].geometry().bottom()


def map_view_px(window) -> float:
    """The height of attention's map view, in px on screen."""
    view = window.docks["attention"].widget().large.plot.getViewBox()
    return view.sceneBoundingRect().height()


@pytest.mark.parametrize("screen_name", list(SCREENS))
def test_reset_layout_gives_attentions_map_the_larger_part_and_keeps_every_plot_legible(qtbot, tmp_path,
                                                                                      monkeypatch, screen_name):
    with journey_in_a_window(qtbot, tmp_path, monkeypatch, SCREENS[screen_name]) as journey:
        window = journey.window
        journey.open(BUNDLED / "shakespeare-gqa", PROMPT)
        journey.act("View ▸ Reset Layout", lambda: reset_layout(window))
        settle(0.5)
        journey.act("settled", lambda: None)
        height, least = map_view_px(window), MAP_SHARE * under_prompt_px(window)
        assert height >= least, f"attention's map view is {height:.0f} px tall, under {least:.0f} px " \
                                f"({MAP_SHARE} of the {under_prompt_px(window)} px under the prompt)"
        attention = window.docks["attention"]
        bottom = [name for name, dock in window.docks.items()
                  if window.dockWidgetArea(dock).name == "BottomDockWidgetArea" and not dock.isHidden()]
        if screen_name == "1366x768":         # too short for two rows of plots: the bottom tabs behind attention
            assert not bottom, f"docks under attention at 1366x768: {bottom}"
            return
        assert bottom, "no bottom tabs under attention at 1920x1080"
        for name in bottom:                   # Journey.act: every plot in sight at least MIN_PLOT_PX each way
            journey.act(f"{name} raised", lambda name=name: journey.raise_panel(name))
            assert in_sight(attention), f"attention went out of sight with {name} raised"
        residual = journey.raise_panel("residual")
        qtbot.waitUntil(lambda: residual.stream is not None, timeout=30000)
        journey.act("residual read", lambda: None)
        assert in_sight(residual.plot_view), "the Residual stream's plot is hidden in the bottom tabs"
