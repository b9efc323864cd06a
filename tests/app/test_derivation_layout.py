"""Show the work's map keeps a legible height under its rotated key labels, in the dock a 1366x768 screen gives it.

Seen on a bare X screen at 1366x768: a cell of SmolLM2's map clicked, Show the work came to the front in the
bottom tab group (about 1020 x 470 px) and split its plots' column equally between the map and the q·k chart;
the map's top axis of rotated words ('␣capital', '␣France') took half of its share, and the map itself was
579 x 116 px.
"""
from __future__ import annotations

import pytest
from PySide6.QtCore import QSize

from tests.app.journey import BUNDLED, journey_in_a_window
from tests.app.layout_probe import plot_boxes
from tests.app.screen_fit import MIN_PLOT_PX

pytestmark = pytest.mark.usefixtures("store_home")  # the store in the test's folder

# Tokens of the bundled model's vocabulary as long as a tick label gets (views/maps.short_label: 10 characters).
PROMPT = "The melancholy Gloucester and Buckingham understand their conscience"


def test_show_the_works_map_is_legible_under_long_key_labels_at_1366(qtbot, tmp_path, monkeypatch):
    with journey_in_a_window(qtbot, tmp_path, monkeypatch, QSize(1366, 768)) as journey:
        journey.open(BUNDLED / "shakespeare-gqa", PROMPT)
        journey.raise_panel("derivation")
        dock = journey.window.docks["derivation"]
        derivation = dock.widget()
        qtbot.waitUntil(lambda: derivation.drawn().kind == "trace", timeout=20000)
        widest = max(len(text) for text in journey.window.session.trace.token_text)
        assert widest >= 10, f"the prompt's tokens are too short to test rotated labels: {widest} characters"
        for height in range(480, 620, 20):          # the bottom tab group's height at 1366x768 on Xvfb: 530-545 px
            dock.setFixedHeight(height)
            journey.idle("Show the work resized")
            boxes = [box for box in plot_boxes(journey.window) if box["dock"] == "derivation"]
            assert len(boxes) == 2, boxes
            assert all(min(box["width"], box["height"]) >= MIN_PLOT_PX for box in boxes), (height, boxes)
