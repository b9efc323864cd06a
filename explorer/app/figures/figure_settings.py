"""What exported figures remember between runs: their theme and text size, and the folder the last one went to,
kept in the app's QSettings file under export/….

The window's settings (explorer.app.window.settings.AppSettings) are these and the window's own keys; a figure
finds them on the window that holds it, and so never imports the window.
"""
from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QSettings

from explorer.views import figure_text
from explorer.views.figure_text import FIGURE_THEMES

ORGANIZATION = "transformer-explorer"       # the app's QSettings file: ORGANIZATION/APPLICATION
APPLICATION = "explorer"
FIGURE_TEXT_SCALES = figure_text.SCALES     # exported figures' text, times its size (one table with the CLI's)


class FigureSettings:
    """Typed access to the exported figures' keys of a QSettings (the person's file unless one is given)."""

    def __init__(self, qsettings: QSettings | None = None) -> None:
        self.q = qsettings if qsettings is not None else QSettings(ORGANIZATION, APPLICATION)

    @property
    def figure_theme(self) -> str:
        """The colours of exported figures (File ▸ Dark Export Figures): 'light', print-ready, or 'dark'."""
        theme = str(self.q.value("export/figure_theme", "light"))
        return theme if theme in FIGURE_THEMES else "light"

    @figure_theme.setter
    def figure_theme(self, theme: str) -> None:
        self.q.setValue("export/figure_theme", theme if theme in FIGURE_THEMES else "light")

    @property
    def figure_text_scale(self) -> float:
        """The text size of exported figures (File ▸ Export Figure Text Size), one of FIGURE_TEXT_SCALES."""
        try:
            scale = float(self.q.value("export/figure_text_scale", 1.0))
        except (TypeError, ValueError):
            return 1.0
        return scale if scale in FIGURE_TEXT_SCALES else 1.0

    @figure_text_scale.setter
    def figure_text_scale(self, scale: float) -> None:
        self.q.setValue("export/figure_text_scale", float(scale) if float(scale) in FIGURE_TEXT_SCALES else 1.0)

    @property
    def last_folder(self) -> str:
        """The folder the last export was written to (the home folder at first)."""
        return str(self.q.value("export/last_folder", str(Path.home())))

    @last_folder.setter
    def last_folder(self, folder: str) -> None:
        self.q.setValue("export/last_folder", folder)
