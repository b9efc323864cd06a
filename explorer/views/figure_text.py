"""The text sizes of exported figures: one table that the app's File ▸ Export Figure Text Size menu and the
CLI's `export --text-size` both read, so the two offer the same choices; and their colour themes.

A size is a factor on the figure's text for the image's size (figures.font_scale): 1 is the size the
labels have on screen at 1000 × 800, 1.5 and 2 are for slides read from the back of a room.
"""
from __future__ import annotations

from dataclasses import dataclass

from explorer.core.errors import ExplorerError


@dataclass(frozen=True)
class TextSize:
    scale: float            # times the text's size for the image
    option: str             # how the CLI's --text-size names it
    menu: str               # how the app's menu names it (& marks the shortcut letter)


# Exported figures: print-ready black on white unless dark ones are asked for, whatever the app's theme
# (background, foreground); drawing.colours paints them, the settings offer their names without pyqtgraph.
FIGURE_COLOURS = {"light": ("#ffffff", "#111111"), "dark": ("#101014", "#e6e6e6")}
FIGURE_THEMES = tuple(FIGURE_COLOURS)
TEXT_SIZES = (TextSize(1.0, "1", "&Normal"), TextSize(1.5, "1.5", "&Large (1.5×)"),
              TextSize(2.0, "2", "&Largest (2×)"))
SCALES = tuple(size.scale for size in TEXT_SIZES)


def text_scale(option: str) -> float:
    """The factor `option` names ("1", "1.5", "2"; "1x", "2×" too), else one sentence listing the choices."""
    cleaned = str(option).strip().lower().rstrip("x×")
    for size in TEXT_SIZES:
        try:
            if float(cleaned) == size.scale:
                return size.scale
        except ValueError:
            break
    choices = ", ".join(size.option for size in TEXT_SIZES)
    raise ExplorerError(f"--text-size {option!r} is not a text size; choose one of {choices}.")
