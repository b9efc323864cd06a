"""After View ▸ Reset Layout, a shrink to the least size and a regrow give attention and the bottom tabs back the
heights the layout gave them, and attention's plots stay legible.

Seen on a bare X screen at 1920x1080 (drive 16), with the translator open and Learn beside the panels: asked to
shrink to nothing, the window went to its least size in steps (the bottom tabs folded behind attention, then
unfolded once the least height grew to 900 px), and grown back to 1920 x 1080 it left attention's map about 45 px
tall, the bottom tabs the rest. Each fold and unfold moved docks, and each move had the layout taken again from
the squeezed window, so the regrow gave back the squeezed shares. The sizes below are the ones X produced.

Expectation: each dock's height after Reset Layout, read before the shrink, within a few pixels after the regrow,
and every plot of attention at least MIN_PLOT_PX (tests/app/screen_fit.py) each way.
"""
from __future__ import annotations

import pytest
from PySide6.QtCore import QSize

from explorer.app.window import learn_placement
from tests.app.journey import BUNDLED, journey_in_a_window
from tests.app.layout_probe import in_sight, plot_boxes
from tests.app.screen_fit import MIN_PLOT_PX, SCREENS, settle

pytestmark = pytest.mark.usefixtures("store_home")  # the store in the test's folder

# What X did with "make it 1 x 1" and a person's later drag: the window at its least size, then taller as the
# least height grew (its left column's text wrapped), then back to the screen.
ROUND_TRIP = [QSize(1, 1), QSize(796, 900)]
SLACK_PX = 8


def heights_in_sight(window) -> dict[str, int]:
    """The height of every dock in sight, once the layout Qt has pending is done (as it is on screen)."""
    settle(0.3)
    window.layout().activate()
    return {name: dock.height() for name, dock in window.docks.items() if in_sight(dock)}


@pytest.mark.parametrize("screen", list(SCREENS), ids=list(SCREENS))
def test_reset_layout_then_least_size_and_regrow_gives_the_heights_back(qtbot, tmp_path, monkeypatch, screen):
    size = SCREENS[screen]
    with journey_in_a_window(qtbot, tmp_path, monkeypatch, size) as journey:
        window = journey.window
        journey.open(BUNDLED / "translate-en-zh", "The capital of France is Paris, and the capital of Japan is")
        journey.act("Help ▸ Learn", lambda: learn_placement.open_learn(window))
        journey.act("View ▸ Reset Layout", window.default_layout)
        journey.raise_panel("attention")
        laid_out, before = window.size(), heights_in_sight(window)
        assert "attention" in before
        for step in ROUND_TRIP:
            window.resize(step.boundedTo(size))
            journey.idle(f"resized to {step.width()} x {step.height()}")
        journey.act("grown back", lambda: window.resize(laid_out))
        after = heights_in_sight(window)
        assert after.keys() == before.keys(), f"in sight {sorted(after)}, {sorted(before)} before"
        moved = [f"{name} is {after[name]} px tall, {height} before" for name, height in before.items()
                 if abs(after[name] - height) > SLACK_PX]
        assert not moved, "; ".join(moved)
        small = [box for box in plot_boxes(window)
                 if box["dock"] == "attention" and min(box["width"], box["height"]) < MIN_PLOT_PX]
        assert not small, small
