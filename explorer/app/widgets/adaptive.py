"""Panels that lay their parts side by side in a wide dock and one above the other in a tall one, and share a
splitter's room as a person dragged it (kept_shares)."""
from __future__ import annotations

import math
from dataclasses import dataclass

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QSplitter, QTextEdit

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


@dataclass(frozen=True)
class Placement:
    """Where a square plot, an optional second plot and a text lie in a panel. `outer`: the plots "beside" the text
    (left of it) or "stacked" over it, their part `part` px along that way; `inner`: the square plot "alone", or
    "beside" or "stacked" with the second, the square plot's part `first` px of the plots' along that way; `side`:
    the square plot's view, px each way; `text`: the least px the text keeps along the outer way; `spare`: the px
    of the square plot's part across the outer way that its square view leaves empty."""

    outer: str
    inner: str
    part: int
    first: int
    side: int
    text: int
    spare: int = 0


KEEP_SECOND = 0.75           # the second plot is shown where the square keeps this share of the side it has alone
KEEP_ACROSS = 0.8            # the second plot goes across the square's part (under a square beside the text) where
                             # that keeps this share of the square's side, rather than leave the square's part
                             # emptier than the square: a 248 px map sat in a 249 x 433 px axis, the row's width
                             # holding it back, where across it is 223 px and the text has the room's width


def readable_px(text: QTextEdit, chars: int) -> int:
    """The px a text widget needs to show `chars` average characters of its own font a line (QFontMetrics), with
    its frame, document margins and vertical scroll bar: a text least measured in the font, so that a larger font
    (a presentation's) asks more."""
    chrome = 2 * (text.frameWidth() + round(text.document().documentMargin()))
    scroll_bar = text.verticalScrollBar().sizeHint().width()
    return chars * text.fontMetrics().averageCharWidth() + chrome + scroll_bar


def square_placement(room: tuple[int, int], handles: tuple[int, int], axes: tuple[tuple[int, int], tuple[int, int]],
                     least: int, text_least: int, share: float, readable: int | None = None,
                     keep_second: float = KEEP_SECOND, judged_by: tuple | None = None) -> Placement | None:
    """The placement that gives the square plot (axes[0], its axes' px across and down) the largest square view,
    the second plot (axes[1]) beside or under it where that costs the square little (KEEP_SECOND), every view at
    least `least` px each way and the text `text_least` px; the second plot's part grows to `share` of the panel.
    With `readable` (px, e.g. readable_px of the text), the text keeps that much wherever the room also has the
    square plot's least, the square giving up size first, and the second plot stays shown wherever a text of
    `text_least` left it room; where it does not, the text narrows to `text_least`. Placement.text says which.
    `keep_second` is the share of the square alone's side the square keeps with the second (0: wherever it fits).
    With `judged_by` (axes like `axes`), whether the second is shown, and beside which text, is judged with those
    axes (with `axes` where those leave the square no room), and the sizes then laid out with `axes`: a ratio of
    sides judged with measured axes flips on a few px of them (a model's key labels took Show the work's q·k bars
    away for one model and not the next, in the same room).
    A function of the room alone, never of the sizes before: None where even the square plot alone has no room."""
    if judged_by is not None:
        # Where the judging axes leave even the square no room (a short dock), the axes themselves judge
        judged = (_judged(room, handles, judged_by, least, text_least, share, readable, keep_second)
                  or _judged(room, handles, axes, least, text_least, share, readable, keep_second))
        if judged is not None:
            shown, text = judged
            placed = _chosen(_found(room, handles, axes, least, text, share), 0.0 if shown else math.inf)
            if placed is not None:
                return placed
        keep_second = math.inf          # the judged text leaves the square no room: alone, where it has some
    narrow = _chosen(_found(room, handles, axes, least, text_least, share), keep_second)
    if readable is None:
        return narrow
    found = _found(room, handles, axes, least, readable, share)
    placed = _chosen(found, keep_second)
    if placed is None:
        return narrow
    if placed.inner == "alone" and narrow is not None and narrow.inner != "alone":
        # The second plot too where the readable text leaves it room, the square smaller (Learn beside at 1366 x 768)
        placed = _paired(found) or placed
    return placed


def _judged(room, handles, axes, least: int, text_least: int, share: float, readable: int | None,
            keep_second: float) -> tuple[bool, int] | None:
    """Whether the second plot is shown, by the ratio alone (the square with it keeps `keep_second` of its side
    alone), and the text's least: `readable` where that leaves the square room, else `text_least`; None where
    neither does. Never the override that shows the second wherever a narrow text left it room: at 614 x 471 it
    left Show the work's map 161 of 333 px."""
    for text in (text_least,) if readable is None else (readable, text_least):
        placed = _chosen(_found(room, handles, axes, least, text, share), keep_second)
        if placed is not None:
            return placed.inner != "alone", text
    return None


def _found(room, handles, axes, least: int, text_least: int, share: float) -> list[Placement]:
    """Every placement with room, the plots beside the text and stacked over it."""
    return [placement for outer in ("beside", "stacked")
            for placement in _placements(outer, room, handles, axes, least, text_least, share)]


def _chosen(found: list[Placement], keep_second: float) -> Placement | None:
    """The square plot's largest view, with the second plot where the square placed with it (_paired, which may
    take a smaller square across) keeps `keep_second` of the square alone's."""
    alone = max((p for p in found if p.inner == "alone"), key=lambda p: p.side, default=None)
    paired = _paired(found)
    if paired is not None and (alone is None or paired.side >= keep_second * alone.side):
        return paired
    return alone


def _paired(found: list[Placement]) -> Placement | None:
    """The square plot with the second: the largest square, but the second across the square's part where that
    keeps KEEP_ACROSS of it. With the second along the outer way (square, second and text in one row), a square
    that the row's width holds back sat mid-way in a part as tall as the panel (a 248 px map in a 249 x 433 px
    axis); across, the second takes that height under the square and the text the width the second had."""
    paired = [p for p in found if p.inner != "alone"]
    largest = max(paired, key=lambda p: p.side, default=None)
    across = max((p for p in paired if p.inner != p.outer), key=lambda p: p.side, default=None)
    if largest is not None and across is not None and largest.spare > 0 and across.side >= KEEP_ACROSS * largest.side:
        return across
    return largest


def _placements(outer: str, room, handles, axes, least: int, text_least: int, share: float) -> list[Placement]:
    """The square plot alone, then with the second across the outer way, then along it; those with room only."""
    beside = outer == "beside"
    along, across = room if beside else room[::-1]
    (square_along, square_across), (other_along, other_across) = (
        (pair if beside else pair[::-1]) for pair in axes)
    handle, inner_handle = handles
    most = along - handle - text_least                       # the plots' part at most
    other = least + other_along                              # the second plot's least part along the outer way
    found = []
    side = min(most - square_along, across - square_across)                 # alone
    found.append(Placement(outer, "alone", side + square_along, side + square_along, side, text_least,
                           across - square_across - side))
    side = min(most - square_along, across - inner_handle - least - other_across - square_across)   # across
    if other > most:             # the second plot's view is its part less its axes: 113 px where `most` cut it
        side = -1
    part = min(most, max(side + square_along, other))
    found.append(Placement(outer, "stacked" if beside else "beside", part, side + square_across, side, text_least))
    side = min(across - square_across, most - inner_handle - other - square_along)                    # along
    if across - other_across < least:
        side = -1
    part = min(most, max(side + square_along + inner_handle + other, int(share * along)))
    found.append(Placement(outer, outer, part, side + square_along, side, text_least, across - square_across - side))
    return [placement for placement in found if placement.side >= least]
