"""How the head atlas shares its splitter between the scores map, the list of heads and the example pattern.

Side by side or stacked, whichever gives the smaller plot's view more room; the list as wide as its columns (side by
side) or READABLE_ROWS rows tall (stacked), and the two plots the rest, their views equally large; or the shares a
person dragged the handles to, kept at later resizes until the parts turn. In shares of 2 : 1 : 2 the map, whose
axis and colour bar take ~110 px of its share, had a 97 px view at the window's least size, and stacked at its least
width with the screen's height both views were 98 px tall where side by side they had 125 x 350.

The splitter is shared out again only when it turns, when its size changed by MATERIAL_PX or more since it was last
shared, when the list's own room changed, or when what surrounds a plot's view (its axes, colour bar and title) did:
shared out at every resize (a zero timer each), a dock's first raise and each layer of a long text's reading relaid
both plots again and again at the same size. Each plot's view box wakes the share when it is resized (`watch`): a share
measured while the map's colour bar and axis were not laid out yet (27 px of them, not 113) gave the map an 82 px
view, and nothing resized the panel after.
"""
from __future__ import annotations

from collections.abc import Callable

import pyqtgraph as pg
from PySide6.QtCore import QObject, Qt, QTimer
from PySide6.QtWidgets import QSplitter, QTableWidget, QWidget

from explorer.app.widgets.adaptive import kept_shares, orient

SHARES = (2, 1, 2)            # map : list : example before the plots are measured
READABLE_ROWS = 5             # the list's rows in sight, stacked (2 : 1 : 2 of Qt's 30 px rows showed 2½ at 1366x768)
LEAST_VIEW_PX = 120           # a plot's view kept at least this long when the person's shares are followed
MATERIAL_PX = 8               # a change of the splitter's size from which it is shared out again


class AtlasShares(QObject):
    """The atlas's `splitter` (map, `table`, example) shared out for `panel`'s size; `plots()` gives the two plots as
    (their widget, their PlotItem), or None while they are not built."""

    def __init__(self, panel: QWidget, splitter: QSplitter, table: QTableWidget,
                 plots: Callable[[], list[tuple[pg.GraphicsView, pg.PlotItem]] | None]) -> None:
        super().__init__(panel)
        self.panel, self.splitter, self.table, self.plots = panel, splitter, table, plots
        self.hand_shares: tuple[float, ...] | None = None     # the shares the person dragged, kept at resizes
        self.shared: tuple | None = None                      # what the splitter was last shared for (_key, around)
        self._timer = QTimer(self, singleShot=True, interval=0)   # once the splitter has its new size
        self._timer.timeout.connect(self.share)
        splitter.splitterMoved.connect(self._on_moved)

    def resized(self) -> None:
        """The panel was resized: shared again in the next turn, once Qt has laid the splitter out, if the parts
        turn or its size changed materially."""
        self._timer.start()

    def watch(self, plot: pg.PlotItem) -> None:
        """`plot` was built: its view box's resizes (its axes or colour bar laid out, or grown) wake the share."""
        plot.getViewBox().sigResized.connect(self.resized)

    def list_changed(self) -> None:
        """The list's columns were fitted to their contents: shared again in the next turn if its room changed."""
        self._timer.start()

    def _wanted(self, around: list[tuple[int, int]] | None) -> bool:
        """Whether the splitter is to be shared again: never shared for its plots as laid out, turned, its size or
        what surrounds a plot's view changed by MATERIAL_PX or more, or the list's room changed."""
        shared = self.shared
        if shared is None or around is None:
            return True
        orientation, size, listed = self._key()
        turns = self._wide(around) != (orientation == Qt.Orientation.Horizontal)
        moved = [abs(now - then) for now, then in zip(size, shared[1])]
        moved += [abs(now - then) for plot, before in zip(around, shared[3]) for now, then in zip(plot, before)]
        return turns or orientation != shared[0] or listed != shared[2] or max(moved) >= MATERIAL_PX

    def _key(self) -> tuple:
        orientation = self.splitter.orientation()
        size = self.splitter.size()
        return orientation, (size.width(), size.height()), self._list_px(orientation == Qt.Orientation.Vertical)

    def _wide(self, around: list[tuple[int, int]]) -> bool:
        return self._least_view_px(True, around) >= self._least_view_px(False, around)

    def share(self) -> None:
        """Side by side or stacked, and the sizes of the parts (the docstring of this module)."""
        around = self._around_views()
        if not self._wanted(around):
            return
        size = self.splitter.size()
        wide = None if around is None else self._wide(around)
        if orient(self.splitter, self.panel.width(), self.panel.height(), SHARES, wide=wide):
            self.hand_shares = None                  # shares along the other way say nothing of this one
        if around is None:
            self.shared = None                       # not laid out yet: shared again at the next resize
            return
        vertical = self.splitter.orientation() == Qt.Orientation.Vertical
        extra = [height if vertical else width for width, height in around]
        room = (size.height() if vertical else size.width()) - 2 * self.splitter.handleWidth()
        self.shared = (*self._key(), around)
        if self.hand_shares is not None:
            hint = self.table.minimumSizeHint()          # the splitter holds the list at its least anyway
            least = (extra[0] + LEAST_VIEW_PX, hint.height() if vertical else hint.width(), extra[1] + LEAST_VIEW_PX)
            self.splitter.setSizes(kept_shares(room, self.hand_shares, least))
            return
        listed = self._list_px(vertical)
        plots = room - listed
        each = max(0, (plots - sum(extra)) // 2)
        self.splitter.setSizes([each + extra[0], listed, plots - each - extra[0]])

    def _on_moved(self, _position: int, _index: int) -> None:
        """A person's drag: the shares it leaves are kept at every later resize, until the parts turn."""
        sizes = self.splitter.sizes()
        self.hand_shares = tuple(px / sum(sizes) for px in sizes) if sum(sizes) else None

    def _around_views(self) -> list[tuple[int, int]] | None:
        """The px of each plot's widget, across and down, that are not its view (axes, colour bar, title); None
        before they are built and laid out."""
        plots = self.plots()
        if plots is None:
            return None
        around = []
        for view, plot in plots:
            box = plot.getViewBox().sceneBoundingRect()
            if box.width() <= 0 or box.height() <= 0:
                return None
            around.append((max(0, view.width() - round(box.width())), max(0, view.height() - round(box.height()))))
        return around

    def _least_view_px(self, wide: bool, around: list[tuple[int, int]]) -> int:
        """The smaller side of the smaller plot's view, the plots side by side (`wide`) or stacked."""
        size, handles = self.splitter.size(), 2 * self.splitter.handleWidth()
        if wide:
            across = (size.width() - self._list_px(False) - handles - sum(w for w, _ in around)) // 2
            return min(across, size.height() - max(h for _, h in around))
        down = (size.height() - self._list_px(True) - handles - sum(h for _, h in around)) // 2
        return min(down, size.width() - max(w for w, _ in around))

    def _list_px(self, vertical: bool) -> int:
        """The list's share: READABLE_ROWS rows and its header stacked, its columns and scroll bar beside."""
        table = self.table
        if vertical:
            return table.horizontalHeader().sizeHint().height() + READABLE_ROWS * \
                table.verticalHeader().defaultSectionSize() + 2 * table.frameWidth()
        return table.horizontalHeader().length() + table.verticalScrollBar().sizeHint().width() + \
            2 * table.frameWidth()
