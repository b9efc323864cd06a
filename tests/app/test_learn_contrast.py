"""View ▸ Presentation reaches the Learn panel's page: its "Stop N of 12" line is drawn at WCAG 7:1 or
more against the page, measured on the pixels of the page as drawn, in the light and the dark theme."""
from __future__ import annotations

import pytest
from PySide6.QtWidgets import QApplication

from explorer.app.window.learn_placement import open_learn
from explorer.app.window.theme import apply_theme
from tests.app.screen_fit import settle
from tests.app.test_presentation_contrast import AAA, image_array, presentation
from tests.app.text_contrast import glyph_contrast, restore_palette  # noqa: F401 (a fixture)


def stop_line_rect(panel) -> list[float]:
    """The first paragraph of the page ("Stop 1 of N") in the panel's coordinates."""
    text = panel.text
    document = text.document()
    block = document.firstBlock()
    assert block.text().startswith("Stop 1 of"), block.text()
    rect = document.documentLayout().blockBoundingRect(block)
    origin = text.viewport().mapTo(panel, rect.topLeft().toPoint())
    return [origin.x(), origin.y(), rect.width(), rect.height()]


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_the_stop_counter_has_aaa_contrast_in_presentation(palette_window, theme):
    apply_theme(QApplication.instance(), theme, palette_window)
    panel = open_learn(palette_window)
    presentation(palette_window).trigger()
    settle(0.4)
    image = image_array(panel.grab().toImage())
    ratio, glyphs = glyph_contrast(image, stop_line_rect(panel))
    assert glyphs > 0 and ratio >= AAA, f"'Stop 1 of N' is drawn at {ratio:.2f}:1 ({theme})"
