"""The Residual stream and Head atlas use the room their dock gives them, the KV lab names the translator whole,
and Learn is never drawn over attention (issue 22, the leftovers of drive 15).

Expectations are what a person sees, in the real window on emulated 1366x768 and 1920x1080 screens
(tests/app/screen_fit.py), through journeys that check every visible plot after every action (Journey.act):
- Residual stream: no blank strip inside the panel: its plot and table, stacked, cover the panel's body (at
  1920x1080 the table alone sat in the middle of a 366 px body, 217 px of it blank above and below);
- Head atlas at the window's least size: both plots at least MIN_PLOT_PX each way (the scores map was 97 px wide);
- KV lab: the model's name is drawn exactly as the whole name is, pixel for pixel ("translate-en-…" before);
- Learn beside attention at the translator's least size: the two docks' rectangles do not overlap.
"""
from __future__ import annotations

import pytest
from PySide6.QtCore import QPoint, QRect, QSize, Qt
from PySide6.QtGui import QImage, QPainter
from PySide6.QtWidgets import QWidget

from explorer.app.window import learn_placement
from tests.app.journey import BUNDLED, journey_in_a_window
from tests.app.layout_probe import in_sight, plot_boxes
from tests.app.screen_fit import MIN_PLOT_PX, SCREENS

pytestmark = pytest.mark.usefixtures("store_home")  # the store in the test's folder

PROMPT = "When Mary and John went to the store, John gave a drink to"
GAP_PX = 6                 # the body's spacing between its widgets, and a pixel or two of rounding


def blank_strip(body: QWidget) -> int:
    """The tallest strip of `body`'s height that none of its visible child widgets covers."""
    spans = sorted((child.y(), child.y() + child.height()) for child in body.findChildren(QWidget)
                   if child.parentWidget() is body and child.isVisible())
    tallest, reached = 0, 0
    for top, bottom in spans:
        tallest, reached = max(tallest, top - reached), max(reached, bottom)
    return max(tallest, body.height() - reached)


@pytest.mark.parametrize("screen_name", list(SCREENS))
def test_the_residual_stream_leaves_no_blank_strip(qtbot, tmp_path, monkeypatch, screen_name):
    screen = SCREENS[screen_name]
    with journey_in_a_window(qtbot, tmp_path, monkeypatch, screen) as journey:
        window = journey.window
        journey.open(BUNDLED / "shakespeare-gqa", PROMPT)
        least = window.minimumSizeHint()
        for size in (screen, QSize(least.width(), screen.height()), least, screen):
            journey.act(f"resized to {size.width()}x{size.height()}", lambda size=size: window.resize(size))
            panel = journey.raise_panel("residual")
            journey.act("residual raised", lambda: None)
            qtbot.waitUntil(lambda: panel.stream is not None, timeout=30000)
            journey.act("residual read", lambda: None)
            assert in_sight(panel.table), "the residual stream's table is out of sight"
            strip = blank_strip(panel.body_widget)
            assert strip <= GAP_PX, f"at {window.width()}x{window.height()} the residual stream leaves a blank " \
                                    f"strip of {strip} px in its {panel.body_widget.height()} px"
        if screen_name == "1920x1080":          # the launch layout has room for the plot as well as the table
            journey.act("residual raised", lambda: journey.raise_panel("residual"))
            assert in_sight(panel.plot_view), "the residual stream's plot is hidden at 1920x1080"


@pytest.mark.parametrize("screen_name", list(SCREENS))
def test_the_head_atlas_plots_are_legible_at_the_windows_least_size(qtbot, tmp_path, monkeypatch, screen_name):
    screen = SCREENS[screen_name]
    with journey_in_a_window(qtbot, tmp_path, monkeypatch, screen) as journey:
        window = journey.window
        journey.open(BUNDLED / "shakespeare-gqa", PROMPT)
        least = window.minimumSizeHint()
        for size in (least, QSize(least.width(), screen.height()), screen):
            journey.act(f"resized to {size.width()}x{size.height()}", lambda size=size: window.resize(size))
            panel = journey.raise_panel("atlas")
            journey.act("atlas raised", lambda: None)       # Journey.act: every visible plot >= MIN_PLOT_PX
            qtbot.waitUntil(lambda: panel.values is not None, timeout=30000)
            journey.act("atlas scored", lambda: None)
            boxes = [box for box in plot_boxes(window) if box["dock"] == "atlas"]
            assert len(boxes) == 2, boxes
            assert all(min(box["width"], box["height"]) >= MIN_PLOT_PX for box in boxes), boxes


def drawn_alone(widget: QWidget) -> QImage:
    """`widget` drawn on a transparent image, without its background."""
    image = QImage(widget.size(), QImage.Format.Format_ARGB32_Premultiplied)
    image.fill(Qt.GlobalColor.transparent)
    widget.render(image, QPoint(), renderFlags=QWidget.RenderFlag.DrawChildren)
    return image


def whole_text(widget: QWidget, text: str) -> QImage:
    """`text` whole, in `widget`'s font and colour, left and centred on a line of `widget`'s size."""
    image = QImage(widget.size(), QImage.Format.Format_ARGB32_Premultiplied)
    image.fill(Qt.GlobalColor.transparent)
    painter = QPainter(image)
    painter.setFont(widget.font())
    painter.setPen(widget.palette().color(widget.foregroundRole()))
    painter.drawText(QRect(QPoint(), widget.size()), int(Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft),
                     text)
    painter.end()
    return image


@pytest.mark.parametrize("screen_name", list(SCREENS))
def test_the_kv_lab_names_the_translator_whole(qtbot, tmp_path, monkeypatch, screen_name):
    screen = SCREENS[screen_name]
    with journey_in_a_window(qtbot, tmp_path, monkeypatch, screen) as journey:
        window = journey.window
        journey.open(BUNDLED / "translate-en-zh", PROMPT)
        name = window.controller.summary.name
        for opening_learn in (False, True):
            if opening_learn:
                journey.act("Help ▸ Learn", lambda: learn_placement.open_learn(window))
            panel = journey.raise_panel("kv_lab")
            journey.act("KV lab raised", lambda: None)
            label = panel.source_label
            assert label.text() == name and label.toolTip() == name, (label.text(), label.toolTip())
            assert drawn_alone(label) == whole_text(label, name), \
                f"the KV lab draws {name!r} cut in a {label.width()} px label"


@pytest.mark.parametrize("screen_name", list(SCREENS))
def test_learn_is_not_drawn_over_attention_at_the_translators_least_size(qtbot, tmp_path, monkeypatch, screen_name):
    screen = SCREENS[screen_name]
    with journey_in_a_window(qtbot, tmp_path, monkeypatch, screen) as journey:
        window = journey.window
        journey.open(BUNDLED / "translate-en-zh", PROMPT)
        journey.act("Help ▸ Learn", lambda: learn_placement.open_learn(window))
        least = window.minimumSizeHint()
        for size in (least, QSize(least.width(), screen.height()), screen):
            journey.act(f"resized to {size.width()}x{size.height()}", lambda size=size: window.resize(size))
            journey.act("attention raised", lambda: journey.raise_panel("attention"))
            learn, attention = window.learn_dock, window.docks["attention"]
            assert in_sight(attention), f"attention is out of sight at {window.width()}x{window.height()}"
            if in_sight(learn):
                assert not learn.geometry().intersects(attention.geometry()), \
                    f"at {window.width()}x{window.height()} Learn {learn.geometry()} is over attention " \
                    f"{attention.geometry()}"
