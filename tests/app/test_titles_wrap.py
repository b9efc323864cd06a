"""A plot title too long for its plot's width takes a second line, wrapped at its spaces, before it is cut: at
1366x768 Why this token's map read "every head, and each layer's FFN (colours s…" and the Head atlas example
"L0.H0 on random toke…" (drive21 m3, m4). Checked with the font's own metrics: every line drawn fits the
title's width and the lines together hold the whole text."""
from __future__ import annotations

import pyqtgraph as pg
import pytest
from PySide6.QtCore import QSize
from PySide6.QtGui import QFontMetricsF

from explorer.app.panels.attribution import AttributionPanel
from explorer.app.window.learn_placement import open_learn
from explorer.drawing.plot_title import FittingTitle
from tests.app.journey import BUNDLED, journey_in_a_window
from tests.app.layout_probe import document_lines
from tests.app.why_helpers import answered, shown


def drawn_lines(title: FittingTitle) -> list[str]:
    return document_lines(title.item.document())


def assert_whole_and_fitting(title: FittingTitle, most: int = 2, least: int = 2) -> None:
    lines = drawn_lines(title)
    metrics = QFontMetricsF(title.item.document().defaultFont())
    cursor_font = title.item.document().firstBlock().charFormat().font()
    metrics = QFontMetricsF(cursor_font) if cursor_font.pixelSize() > 0 or cursor_font.pointSizeF() > 0 else metrics
    assert " ".join(lines) == title.text, lines                       # the whole sentence is shown
    for line in lines:
        assert title.item.document().idealWidth() <= title.width() + 0.5
        assert metrics.horizontalAdvance(line) <= title.width() + 1, (line, title.width())
    assert least <= len(lines) <= most, lines


def test_a_long_title_wraps_whole_words_onto_a_second_line(qtbot):
    view = shown(qtbot, pg.GraphicsLayoutWidget(), (300, 300))
    plot = view.addPlot()
    title = FittingTitle("", parent=plot)
    plot.layout.removeItem(plot.titleLabel)
    plot.titleLabel = title
    plot.layout.addItem(title, 0, 1)
    title.setText("L0.H0 on random tokens repeated twice, the second half")
    qtbot.waitUntil(lambda: title.width() > 0 and len(drawn_lines(title)) == 2, timeout=5000)
    assert_whole_and_fitting(title)


def test_why_this_tokens_map_title_shows_its_whole_sentence_at_1366(qtbot, session, traced_llama):
    panel = answered(qtbot, AttributionPanel, session, traced_llama, "tall")
    panel.resize(620, 480)                        # Why this token's share of a 1366x768 window (drive21 s1_tab8b)
    title = panel.heads.plot.titleLabel
    qtbot.waitUntil(lambda: "every head" in title.text and len(drawn_lines(title)) == 2, timeout=10000)
    assert_whole_and_fitting(title)


@pytest.mark.usefixtures("store_home")
def test_the_head_atlas_examples_title_shows_its_whole_sentence_at_1366(qtbot, tmp_path, monkeypatch):
    with journey_in_a_window(qtbot, tmp_path, monkeypatch, QSize(1366, 768)) as journey:
        open_learn(journey.window)
        journey.open(BUNDLED / "shakespeare-mla", "To be, or not to be")
        panel = journey.raise_panel("atlas")
        journey.idle("scoring the heads")
        title = panel.example.plot.titleLabel
        qtbot.waitUntil(lambda: title.text.startswith("L0.H0 on"), timeout=10000)
        assert_whole_and_fitting(title, least=1)
