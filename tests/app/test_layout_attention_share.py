"""View ▸ Reset Layout gives the attention map, the plot a person reads most, the larger share of the height:
at 1920x1080 the map got 256 px over an Embeddings plot of 274 px (issue 22, #13: "the main map gets about 300 px
of height at 1920×1080"). Expectation from what is on screen alone: the map is taller than any other panel's plot
in sight, with each tab raised in turn."""
from __future__ import annotations

import pytest

from explorer.app.window import dock_layout
from tests.app.journey import BUNDLED, journey_in_a_window, registered_panels
from tests.app.layout_probe import in_sight, plot_boxes
from tests.app.screen_fit import SCREENS


def map_height(window) -> int:
    """The attention map's ViewBox height on screen, in pixels."""
    panel = window.docks["attention"].widget()
    box = panel.large.plot.getViewBox()
    return panel.large_view.mapFromScene(box.sceneBoundingRect()).boundingRect().height()


def others_tallest(window) -> tuple[str, int]:
    """The tallest plot in sight of a panel other than attention (its dock's name and height)."""
    boxes = [(box["dock"], box["height"]) for box in plot_boxes(window) if box["dock"] != "attention"]
    return max(boxes, key=lambda box: box[1], default=("none", 0))


@pytest.mark.parametrize("screen", SCREENS)
def test_reset_layout_gives_the_attention_map_the_tallest_plot(qtbot, tmp_path, monkeypatch, screen):
    """After Reset Layout the map is taller than every other panel's plot, each tab raised in turn where the map
    stays in sight beside it (at 1920x1080 the bottom tabs under attention; at 1366x768 they go behind it)."""
    with journey_in_a_window(qtbot, tmp_path, monkeypatch, SCREENS[screen]) as journey:
        journey.open(BUNDLED / "shakespeare-gqa", "To be, or not to be, that is the question")
        window = journey.window
        journey.act("View ▸ Reset Layout", window.default_layout)
        attention = window.docks["attention"]
        for name in ["attention", *registered_panels()]:
            journey.act(f"raising {name}", lambda name=name: journey.raise_panel(name))
            if not in_sight(attention):
                continue
            dock, tallest = others_tallest(window)
            assert map_height(window) > tallest, (
                f"at {screen}, {name} raised: the map is {map_height(window)} px tall, {dock}'s plot {tallest}")
        if dock_layout.stacks(window):
            under = [dock for dock in window.docks.values() if window.dockWidgetArea(dock) == dock_layout.AREAS[
                "bottom"] and in_sight(dock)]
            assert under and attention.height() > under[0].height(), (attention.height(), under)
