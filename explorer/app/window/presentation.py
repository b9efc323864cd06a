"""View ▸ Presentation: for a projector in a classroom, larger text in high contrast and one panel, the
one in focus, over the whole window; off again, the text, the colours and the layout as they were.

A projector is often 1366×768 and read from the back of the room: the application's font grows by
FONT_SCALE, and the other panels are hidden (dock_shares' maximise) so that the one shown keeps plots
large enough to read at that size. A projector also washes colours out, so every text of the palette
is drawn in high contrast (`high_contrast`): pure black on white (or white on black in a dark theme),
and every other text role at a WCAG contrast of at least 7:1 (level AAA) against its background.
"""
from __future__ import annotations

from PySide6.QtCore import QEvent
from PySide6.QtGui import QColor, QFont, QPalette
from PySide6.QtWidgets import QApplication

from explorer.app.window import dock_layout
from explorer.app.window.dock_shares import focused_dock

FONT_SCALE = 1.4
Role = QPalette.ColorRole
# (background, foreground, placeholder, link, highlight, highlighted text); each text at >= 7:1 on its
# background: the placeholder 8.4:1 and the link 12.9:1 on white, the highlight 16:1 (light; dark alike)
HIGH_CONTRAST = {"light": ("#ffffff", "#000000", "#4d4d4d", "#0000b0", "#000080", "#ffffff"),
                 "dark": ("#000000", "#ffffff", "#b3b3b3", "#80c0ff", "#ffff00", "#000000")}


def scaled(font: QFont, scale: float) -> QFont:
    """`font` `scale` times larger, whether it is sized in points or in pixels."""
    bigger = QFont(font)
    if font.pointSizeF() > 0:
        bigger.setPointSizeF(font.pointSizeF() * scale)
    else:
        bigger.setPixelSize(round(font.pixelSize() * scale))
    return bigger


def high_contrast(palette: QPalette) -> QPalette:
    """`palette` with its texts in high contrast, light or dark as `palette`'s window is. Disabled texts keep
    their own (dimmer) colours: they must look unavailable, and WCAG does not count them."""
    theme = "dark" if palette.color(Role.Window).lightness() < 128 else "light"
    background, foreground, placeholder, link, highlight, highlighted = (QColor(c) for c in HIGH_CONTRAST[theme])
    colours = {Role.Window: background, Role.Base: background, Role.AlternateBase: background,
               Role.Button: background, Role.ToolTipBase: background, Role.WindowText: foreground,
               Role.Text: foreground, Role.ButtonText: foreground, Role.ToolTipText: foreground,
               Role.BrightText: foreground, Role.PlaceholderText: placeholder, Role.Link: link,
               Role.LinkVisited: link, Role.Highlight: highlight, Role.HighlightedText: highlighted}
    contrasted = QPalette(palette)
    for group in (QPalette.ColorGroup.Active, QPalette.ColorGroup.Inactive):
        for role, colour in colours.items():
            contrasted.setColor(group, role, colour)
    return contrasted


class Presentation:
    def __init__(self, window) -> None:
        self.window = window
        self.font_before: QFont | None = None
        self.palette_before: QPalette | None = None
        self.palette_set: QPalette | None = None

    @property
    def on(self) -> bool:
        return self.font_before is not None

    def set_on(self, on: bool) -> None:
        if on == self.on:
            return
        app, shares = QApplication.instance(), self.window.dock_shares
        if on:
            self.font_before, self.palette_before = QFont(app.font()), QPalette(app.palette())
            app.setFont(scaled(self.font_before, FONT_SCALE))
            self.palette_set = high_contrast(self.palette_before)
            app.setPalette(self.palette_set)
            if shares.maximised is None:
                shares.toggle_maximised(focused_dock(self.window))
        else:
            app.setFont(self.font_before)
            # Qt posts the font change: delivered now, the panels hidden under the one shown measure again at
            # the normal font before they come back; else, shown with the large font's sizes, they made the
            # window a few px taller than a 1366x768 screen, and it never shrank back.
            QApplication.sendPostedEvents(None, QEvent.Type.ApplicationFontChange)
            if app.palette() == self.palette_set:         # else a theme was chosen meanwhile: it stays
                app.setPalette(self.palette_before)
            self.font_before = self.palette_before = self.palette_set = None
            if shares.maximised is not None:
                shares.toggle_maximised(shares.maximised[0])
        dock_layout.keep_on_screen(self.window)
