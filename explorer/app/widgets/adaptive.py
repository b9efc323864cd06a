"""Panels that lay their parts side by side in a wide dock and one above the other in a tall one, and share a
splitter's room as a person dragged it (kept_shares)."""
from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QSplitter

WIDE = 1.2                  # width / height at and above which the parts go side by side


def is_wide(width: int, height: int, least: int = 0) -> bool:
    """Wide: at least WIDE times as wide as tall and, for a panel whose parts need it, `least` px wide."""
    return width >= WIDE * max(1, height) and width >= least


def orient(splitter: QSplitter, width: int, height: int, weights: tuple[int, ...] | None = None,
           least: int = 0, wide: bool | None = None) -> bool:
    """Side by side when the panel is wide (or `wide` says so, where the panel decides by its parts' own
    needs), stacked when it is tall (sizes in proportion to `weights`, default equal); True when that changed."""
    wide = is_wide(width, height, least) if wide is None else wide
    wanted = Qt.Orientation.Horizontal if wide else Qt.Orientation.Vertical
    if splitter.orientation() == wanted:
        return False
    splitter.setOrientation(wanted)
    count = splitter.count()
    total = width if wanted == Qt.Orientation.Horizontal else height
    weights = weights or (1,) * count
    splitter.setSizes([total * w // sum(weights) for w in weights])
    return True


def place(layout, items: list, wide: bool) -> None:
    """Put pyqtgraph items of a GraphicsLayout in one row (wide) or one column (tall)."""
    for item in items:
        layout.removeItem(item)
    for index, item in enumerate(items):
        layout.addItem(item, row=0 if wide else index, col=index if wide else 0)


def kept_shares(room: int, shares: tuple[float, ...], least: tuple[int, ...]) -> list[int]:
    """`room` px shared in proportion to `shares`, each part then raised to its `least` px where the others can
    give it from what they hold above their own least (the largest holder gives first)."""
    sizes = [round(room * share) for share in shares]
    sizes[-1] += room - sum(sizes)
    for index, floor in enumerate(least):
        for giver in sorted(range(len(sizes)), key=lambda j: least[j] - sizes[j]):
            short = floor - sizes[index]
            if short <= 0 or giver == index:
                continue
            given = min(short, max(0, sizes[giver] - least[giver]))
            sizes[giver] -= given
            sizes[index] += given
    return sizes


def around_view(plot) -> tuple[int, int] | None:
    """The px of a pyqtgraph PlotItem that are not its view (axes, title, colour bar, margins), across and down, as
    laid out; None before it is laid out."""
    view = plot.getViewBox()
    if view.width() <= 1 or view.height() <= 1:
        return None
    return int(plot.width() - view.width()), int(plot.height() - view.height())
