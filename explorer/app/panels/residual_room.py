"""Where the Residual stream panel puts its norms' plot and its logit lens table in the room its body has.

The plot is shown wherever its view keeps MIN_VIEW_PX each way; the table goes below it or beside it where room
remains, and alone only where no plot fits. At 1920x1080 with Learn open (SmolLM2) the body is 1029x287 px: the
plot (a 120 px view and 42 px of axis) above the table with its 30 layers across (149 px) needs 313 px, and the plot
was hidden, although the table, its layers down, fits beside it and leaves the plot's view 543x247 px.

`arrange` is pure arithmetic over px, read and tested apart from Qt; the table (LensTable) measures what it needs
from the texts it will show, and the panel places the parts.
"""
from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import QSize
from PySide6.QtWidgets import QTableWidget

K = 2                        # lens candidates per layer in the table (its tooltip has them all)
NORMS = (("attn_norms", "‖a_l‖"), ("ffn_norms", "‖f_l‖"), ("residual_norms", "‖h_l‖"))
LABELS = [f"{name} {rank + 1}" for rank in range(K) for name in ("lens", "p")] + [n for _, n in NORMS]
TOKENS = [c for c in range(2 * K) if c % 2 == 0]      # the lens's token columns (down) or rows (across)
CELL_MARGINS_PX = 10         # a cell's margins beside its text
LEAST_ROWS = 3               # the fewest rows of a table that scrolls down to the rest


@dataclass(frozen=True)
class Needs:
    """What the parts need, in px."""

    plot: tuple[int, int]      # the plot's widget whose view is MIN_VIEW_PX each way: (width, height)
    across_h: int              # the table, its layers as columns: its header, rows and sideways scroll bar
    across_w: int              # ... the width of every layer's column whole
    down_w: int                # the table, its layers as rows: the width of its columns whole
    down_least_w: int          # ... its numbers whole and the lens's tokens elided to their headers' width
    down_h: int                # ... the height of its header and every row
    down_least_h: int          # ... of its header and a few rows (it scrolls down to the rest)
    gap: int = 2               # the body's spacing between the two


@dataclass(frozen=True)
class Room:
    """How the body holds them: which are shown, the table's layers across or down, beside or below the plot; the
    table's width beside the plot, and its height below it or its least height across (0: the body's)."""

    plot: bool
    table: bool
    across: bool
    beside: bool = False
    width: int = 0
    height: int = 0


def arrange(width: int, height: int, wide: bool, needs: Needs) -> Room:
    """The plot and the table in a body of `width` x `height` px; `wide`: the panel is wide (layers across when
    the table is alone or runs the body's whole width)."""
    plot_w, plot_h = needs.plot
    if width < plot_w or height < plot_h:
        return Room(plot=False, table=True, across=wide, height=needs.across_h if wide else 0)
    below = height - plot_h - needs.gap        # the table's height under a plot of the least height
    beside = width - plot_w - needs.gap        # its width right of a plot of the least width
    if wide and below >= needs.across_h:
        return Room(plot=True, table=True, across=True, height=needs.across_h)
    if not wide and below >= needs.down_least_h:
        return Room(plot=True, table=True, across=False, height=min(needs.down_h, below))
    if beside >= needs.across_w and height >= needs.across_h:      # every layer in sight, a few of them
        return Room(plot=True, table=True, across=True, beside=True, width=needs.across_w,
                    height=needs.across_h)
    if beside >= needs.down_least_w:
        return Room(plot=True, table=True, across=False, beside=True, width=min(needs.down_w, beside))
    if below >= needs.down_least_h:
        return Room(plot=True, table=True, across=False, height=min(needs.down_h, below))
    return Room(plot=True, table=False, across=wide, height=needs.across_h if wide else 0)


class LensTable(QTableWidget):
    """The logit lens's table, whose preferred size the panel sets where it shares the body with the plot (Qt's
    own hint is 256x192 whatever its rows and columns); a minimum would stop the dock shrinking past it."""

    def __init__(self) -> None:
        super().__init__(0, 0)
        self.preferred = QSize()           # a part <= 0: Qt's own

    def sizeHint(self) -> QSize:
        hint = super().sizeHint()
        return QSize(self.preferred.width() if self.preferred.width() > 0 else hint.width(),
                     self.preferred.height() if self.preferred.height() > 0 else hint.height())

    def needs(self, texts: list[list[str]], row_px: int, width: int, across: bool, plot: tuple[int, int],
              gap: int) -> Needs:
        """What the table needs to show `texts` (a layer's cells each) in its font, with rows `row_px` tall, in a
        body `width` px wide; `across`: its layers are its columns now; `plot` and `gap`: the plot's own needs."""
        frame = 2 * self.frameWidth()
        cells, names = self.fontMetrics(), self.horizontalHeader().fontMetrics()
        header_h = max(self.horizontalHeader().sizeHint().height(), cells.height() + 6)
        n, pad = len(texts), self._header_pad(across)
        cell_px = [max((cells.horizontalAdvance(row[c]) for row in texts), default=0) + CELL_MARGINS_PX
                   for c in range(len(LABELS))]
        name_px = [names.horizontalAdvance(label) + pad for label in LABELS]
        scrolls = n * max(cell_px) > width - max(name_px) - frame      # across: the layers' columns scroll
        scroll_h = self.horizontalScrollBar().sizeHint().height() if scrolls else 0
        columns = [max(cell, name) for cell, name in zip(cell_px, name_px)]
        down_w = names.horizontalAdvance(f"L{n - 1}") + pad + sum(columns) + frame + \
            self.verticalScrollBar().sizeHint().width()
        return Needs(plot=plot, across_h=header_h + len(LABELS) * row_px + scroll_h + frame + 2,
                     across_w=max(name_px) + n * max(cell_px) + frame + 2,
                     down_w=down_w, down_least_w=down_w - sum(columns[c] - name_px[c] for c in TOKENS),
                     down_h=header_h + n * row_px + frame, down_least_h=header_h + LEAST_ROWS * row_px + frame,
                     gap=gap)

    def _header_pad(self, across: bool) -> int:
        """The px a header's section has beside its text, read from the header that names the rows (LABELS)."""
        if across:
            header = self.verticalHeader()
            return header.sizeHint().width() - max(header.fontMetrics().horizontalAdvance(n) for n in LABELS)
        header = self.horizontalHeader()
        return max(header.sectionSizeHint(c) - header.fontMetrics().horizontalAdvance(name)
                   for c, name in enumerate(LABELS))
