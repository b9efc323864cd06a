"""View ▸ Presentation draws text in high contrast: every text colour of the palette at WCAG 7:1 or more
against its background (level AAA), measured on the palette and on the pixels of a panel's header as drawn,
in the light and the dark theme; off again, the palette is the one before."""
from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtGui import QImage, QPalette
from PySide6.QtWidgets import QApplication

from explorer.app.window.theme import apply_theme
from tests.app.screen_fit import settle
from tests.app.text_contrast import contrast, glyph_contrast

AAA = 7.0
Role = QPalette.ColorRole
TEXT_ON = [(Role.WindowText, Role.Window), (Role.Text, Role.Base), (Role.ButtonText, Role.Button),
           (Role.ToolTipText, Role.ToolTipBase), (Role.PlaceholderText, Role.Base), (Role.Link, Role.Base),
           (Role.HighlightedText, Role.Highlight)]


def rgb(colour, over) -> np.ndarray:
    """The colour as drawn over `over` (a placeholder may be translucent)."""
    a = colour.alphaF()
    return np.array([round(a * c + (1 - a) * b) for c, b in
                     zip((colour.red(), colour.green(), colour.blue()), (over.red(), over.green(), over.blue()))])


def palette_contrasts(palette: QPalette) -> dict[str, float]:
    found = {}
    for text, background in TEXT_ON:
        for group in (QPalette.ColorGroup.Active, QPalette.ColorGroup.Inactive):
            back = palette.color(group, background)
            found[f"{text.name} on {background.name} ({group.name})"] = float(
                contrast(rgb(palette.color(group, text), back)[None], rgb(back, back)[None])[0])
    return found


def image_array(image: QImage) -> np.ndarray:
    image = image.convertToFormat(QImage.Format.Format_RGB888)
    width, height = image.width(), image.height()
    data = np.frombuffer(image.constBits(), np.uint8, count=image.bytesPerLine() * height)
    return data.reshape(height, image.bytesPerLine())[:, : 3 * width].reshape(height, width, 3).copy()


def presentation(window):
    return next(a for a in window.menus.view.actions() if a.text().replace("&", "").startswith("Presentation"))


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_presentation_text_has_aaa_contrast(palette_window, theme):
    app = QApplication.instance()
    apply_theme(app, theme, palette_window)
    before = QPalette(app.palette())
    palette_window.docks["next_token"].widget().setFocus()
    presentation(palette_window).trigger()
    settle(0.4)
    low = {what: round(ratio, 2) for what, ratio in palette_contrasts(app.palette()).items() if ratio < AAA}
    assert not low, f"under {AAA}:1 in presentation ({theme}): {low}"
    panel = palette_window.docks["next_token"].widget()
    header = panel.header
    image = image_array(panel.grab().toImage())
    ratio, glyphs = glyph_contrast(image, [header.x(), header.y(), header.width(), header.height()])
    assert glyphs > 0 and ratio >= AAA, f"the header's text is drawn at {ratio:.2f}:1 ({theme})"
    presentation(palette_window).trigger()
    settle(0.2)
    assert app.palette() == before, "off again, the colours are the theme's"


def test_a_theme_chosen_while_presenting_stays_when_presentation_ends(palette_window):
    app = QApplication.instance()
    apply_theme(app, "light", palette_window)
    presentation(palette_window).trigger()
    settle(0.2)
    apply_theme(app, "dark", palette_window)                    # View ▸ Theme ▸ Dark meanwhile
    presentation(palette_window).trigger()
    settle(0.2)
    assert app.palette().color(Role.Window).lightness() < 128, "the dark theme chosen is kept"
