"""Light and dark, following the system unless the person chose one.

The Fusion style with an explicit palette looks the same on every platform; the
pyqtgraph views get a matching background and foreground. The figures' own colours, and the two
palettes, are explorer.drawing.colours's.
"""
from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication, QWidget

from explorer.drawing.colours import follow_foreground, palette_of

PLOT_COLOURS = {"light": ("w", "k"), "dark": ("#1f1f22", "#d8d8d8")}   # (background, foreground)


def system_theme(app: QApplication) -> str:
    """'dark' or 'light', as the platform reports it (light when it does not say)."""
    scheme = app.styleHints().colorScheme()
    return "dark" if scheme == Qt.ColorScheme.Dark else "light"


def resolve(app: QApplication, choice: str) -> str:
    return system_theme(app) if choice == "system" else ("dark" if choice == "dark" else "light")


def apply_theme(app: QApplication, choice: str, root: QWidget | None = None) -> str:
    """Set the palette for `choice` ('system', 'light' or 'dark'); return the theme applied."""
    theme = resolve(app, choice)
    if app.style().name().lower() != "fusion":
        # Set once: setStyle deletes the style before, which pyqtgraph's layouts keep and read in their next
        # layout pass (a SIGSEGV raising Q / K / V after Theme ▸ Dark and back, drive26).
        app.setStyle("Fusion")
    app.setPalette(palette_of(app, theme))
    background, foreground = PLOT_COLOURS[theme]
    before = pg.getConfigOption("foreground")
    pg.setConfigOptions(background=background, foreground=foreground)
    if root is not None:
        for view in root.findChildren(pg.GraphicsView):
            view.setBackground(background)
            follow_foreground(view, before)      # axes and titles made in the theme before
            for item in view.items():            # the heatmaps' frames
                if isinstance(item, pg.ViewBox) and item.border is not None:
                    item.setBorder(pg.mkPen(foreground, width=1))
    return theme
