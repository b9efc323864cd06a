"""What the screenshots showed: a highlighted table row must stay readable in the light and the dark theme."""
from __future__ import annotations

import pytest
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QApplication

from explorer.app.panels import NextTokenPanel
from explorer.app.session import Session
from explorer.app.theme import apply_theme
from tests.app.synthetic_trace import WORDS, build_trace


def luminance(colour: QColor) -> float:
    """WCAG relative luminance."""
    def channel(c: float) -> float:
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4

    return 0.2126 * channel(colour.redF()) + 0.7152 * channel(colour.greenF()) + 0.0722 * channel(colour.blueF())


def contrast(a: QColor, b: QColor) -> float:
    high, low = sorted((luminance(a), luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def over(top: QColor, base: QColor) -> QColor:
    alpha = top.alphaF()
    return QColor.fromRgbF(*(alpha * t + (1 - alpha) * b for t, b in
                             ((top.redF(), base.redF()), (top.greenF(), base.greenF()), (top.blueF(), base.blueF()))))


@pytest.fixture
def restore_palette():
    app = QApplication.instance()
    palette, style = QPalette(app.palette()), app.style().name()
    yield app
    app.setStyle(style)
    app.setPalette(palette)


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_the_chosen_candidate_row_is_readable(qtbot, restore_palette, theme):
    apply_theme(restore_palette, theme)
    session = Session()
    session.set_token_display(lambda token_id: WORDS[token_id])
    panel = NextTokenPanel(session)
    qtbot.addWidget(panel)
    panel.show()
    session.set_trace(build_trace(n_layers=2, prompt_len=5, steps=1))
    row = panel.chosen_rank - 1
    assert row >= 0
    item = panel.table.item(row, 1)
    palette = panel.table.palette()
    background = over(item.background().color(), palette.color(QPalette.ColorRole.Base))
    assert contrast(background, palette.color(QPalette.ColorRole.Text)) >= 4.5
    assert item.background().color() != palette.color(QPalette.ColorRole.Base), "the chosen row is marked"


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_the_formula_header_is_drawn_in_the_theme_text_colour(qtbot, restore_palette, theme):
    apply_theme(restore_palette, theme)
    session = Session()
    panel = NextTokenPanel(session)
    qtbot.addWidget(panel)
    panel.resize(600, 300)
    panel.show()
    session.set_trace(build_trace(n_layers=2, prompt_len=5, steps=1))
    qtbot.wait(50)
    image = panel.header.grab().toImage()
    window = panel.palette().color(QPalette.ColorRole.Window)
    best = max(contrast(image.pixelColor(x, y), window) for x in range(0, image.width(), 2)
               for y in range(image.height()))
    assert best >= 4.5, "the formula is readable on the panel's background"
