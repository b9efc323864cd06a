"""The layout kept so that a shrink and a regrow of the window give the docks back their sizes, and one
panel maximised to the whole window (again to restore).

Qt's main window hands a shrink to the docks that can give, down to their minimums, and a regrow to
whichever it pleases: after a round trip the attention map had lost half its height to the bottom
tabs. The layout is taken when it is made (default layout, restore) and when the person drags a
separator or moves a dock, never from a squeezed window, and given back when the window is back at
that size.

A window shrunk too short for attention over the bottom tabs, each with legible plots (dock_layout.stacks),
has the bottom tabs folded behind attention, as on a short screen, and unfolded as they were once it is tall
enough again: shrunk from 1920 x 1080 to 800 x 600, Qt's shares left the attention map 4 px tall. Between
the two, each keeps at least the height its plots need, and the bottom tabs the height they were laid out at
where attention keeps its least: attention gives first (dock_layout.stack_heights). After a resize, too, the
prompt goes back to its laid-out height and Tokens to the height its table's rows ask (dock_layout.column_heights),
and a window too narrow for Help ▸ Learn's column beside the panels has it folded into attention's tabs
(learn_placement.keep_beside).
"""
from __future__ import annotations

from PySide6.QtCore import QByteArray, QEvent, QObject, QSize, Qt, QTimer
from PySide6.QtWidgets import QApplication, QDockWidget, QMainWindow, QTabBar

from explorer.app.window import dock_layout, learn_placement
from explorer.app.window.dock_tab_bars import put_away_stale_bars, whole_titles


def focused_dock(window: QMainWindow) -> QDockWidget:
    """The dock holding the keyboard focus (a panel's, or one of the window's own such as Learn), else
    attention's (else the first panel's)."""
    focus = QApplication.focusWidget()
    docks = window.docks
    focused = next((d for d in window.findChildren(QDockWidget) if focus is not None and d.isAncestorOf(focus)),
                   None)
    return focused or docks.get("attention") or next(iter(docks.values()))


def in_sight(dock: QDockWidget) -> bool:
    """Docked, shown and the front tab of its group."""
    return dock.isVisible() and not dock.isFloating() and not dock.visibleRegion().isEmpty()


def seen(dock: QDockWidget) -> bool:
    """In sight, or floating and shown: a panel the person can see now (not a tab behind another)."""
    return in_sight(dock) or (dock.isFloating() and dock.isVisible())


def left_column(window: QMainWindow) -> list[QDockWidget]:
    """The docks in sight in the window's left area (Tokens over Next token, as laid out)."""
    return [dock for dock in window.findChildren(QDockWidget)
            if in_sight(dock) and window.dockWidgetArea(dock) == dock_layout.AREAS["left"]]


NEAR = 0.1                   # a regrow within this share of the laid-out size, each way, gives the layout back


def near(size: QSize, taken: QSize) -> bool:
    """Whether `size` is the laid-out `taken` or close to it: a person regrowing a window by hand, or a screen
    that lost a strip to a panel, rarely lands on the very pixel (grown back to 1920 x 1050 after 800 x 600 the
    translator's attention map kept 4 px of height, the layout given back only at the exact size)."""
    return (abs(size.width() - taken.width()) <= NEAR * taken.width()
            and abs(size.height() - taken.height()) <= NEAR * taken.height())


def arrangement(window: QMainWindow) -> frozenset:
    """Where each dock is, sizes aside: its area, floating or closed, and the docks tabbed with it."""
    return frozenset((dock.objectName(), window.dockWidgetArea(dock), dock.isFloating(), dock.isHidden(),
                      frozenset(other.objectName() for other in window.tabifiedDockWidgets(dock)))
                     for dock in window.findChildren(QDockWidget))


class DockShares(QObject):
    def __init__(self, window: QMainWindow) -> None:
        super().__init__(window)
        self.window = window
        self.taken: tuple[QSize, QByteArray] | None = None       # the window's size and its layout, as laid out
        self.left_px = 0                                    # the left column's width then
        self.groups = None                                  # the window's dock_groups then: a new one is a new layout
        self.arranged: set[frozenset] = set()               # the arrangements the window's own rules made since
        self.maximised: tuple[QDockWidget, QByteArray] | None = None
        self.resized_since = False                          # the window left the size the layout was taken at
        self.folded: tuple[list[QDockWidget], QByteArray] | None = None   # the bottom tabs folded, the layout before
        self.folded_fronts: list[QDockWidget] = []          # their front tabs then, in front again once unfolded
        self.folded_closed: frozenset = frozenset()          # the docks closed then: the layout before holds no other
        self._give_back = QTimer(self, singleShot=True, interval=0, timeout=self.give_back)
        self.column_asked = 0                               # the height Tokens asked when its rows were last kept
        self.prompt_px = 0                                  # the prompt's height as laid out
        self.under_px = 0                                   # the bottom tabs' height under attention then (0: none)
        self._asked_more = QTimer(self, singleShot=True, interval=0, timeout=self.layout_asked)
        self.restoring = False                              # a layout given back: its own signals take nothing
        window.installEventFilter(self)

    def take(self, dragged: bool = False) -> None:
        """Remember the layout as it is now, at the window's present size: a layout made (a default one, a
        restore) or a person's drag (`dragged`), never a squeezed window's (see squeezed)."""
        if self.restoring and not dragged:
            return
        if self.maximised is None and (dragged or not self.squeezed() or arrangement(self.window) not in self.arranged):
            self.taken = (self.window.size(), self.window.saveState())
            self.left_px = max((dock.width() for dock in left_column(self.window)), default=0)
            self.groups = getattr(self.window, "dock_groups", None)
            self.arranged = {arrangement(self.window)}
            self.resized_since = False
            prompt = getattr(self.window, "docks", {}).get("prompt")
            self.prompt_px = prompt.height() if prompt is not None and prompt.isVisible() else 0
            under = dock_layout.under_front(self.window, getattr(self.window, "docks", {}))
            self.under_px = dock_layout.group_px(self.window, under[0]) if under else 0

    def squeezed(self) -> bool:
        """Whether the window is smaller than the size its layout was taken at, with the same
        layout. The docks this class and Learn's placement move while it is (the bottom tabs folded and unfolded,
        Learn folded) asked for the layout to be taken again, and a shrink to 796 x 900 and back to 1920 x 1080
        gave back the squeezed shares (attention's map 45 px tall): such an arrangement is not taken (see
        arranged); one a person made (a dock closed, moved) is, as is a layout made afresh (Reset Layout)."""
        if self.taken is None or getattr(self.window, "dock_groups", None) is not self.groups:
            return False
        size, taken = self.window.size(), self.taken[0]
        # Any size smaller, not only one beyond `near` (which is for giving a layout back): dragged from 1366 to
        # 1242 px, Learn folded and that arrangement was taken there, then Learn's column unfolding at 1302 px was
        # taken too, and back at 1366 px the left column had the regrow, 384 px for 334 (drive28 F2)
        return size.width() < taken.width() or size.height() < taken.height()

    def give_back(self) -> None:
        """Back at (near) the size the layout was taken at, the docks get the sizes they had then (Qt's own
        spread of a shrink and a regrow does not return them)."""
        if self.taken is None or self.maximised is not None:
            return
        if not near(self.window.size(), self.taken[0]):
            self.resized_since = True
            self._keep_left_column()
        elif self.resized_since:
            # given back again at each size on the way, until the very size: given back once at 1242 px of 1362,
            # the window grown on by hand to 1362 gave the left column the growth (384 px for 334, drive28 F2)
            self.resized_since = self.window.size() != self.taken[0]
            self.folded = None
            self._restore(self.taken[1])
        self.keep_plots_legible()

    def _keep_left_column(self) -> None:
        """After a resize away from the size the layout was taken at: the left column no wider than the default
        layout's rule for this width (dock_layout.left_column_px) or the width it had when the layout was taken
        (a person's drag among them), the rest to the panels beside it. Qt handed a grow from 1366 to 1920 px,
        the window relaunched at its saved size on a larger screen, to the left column: 893 px wide, and
        attention's map a strip."""
        left = left_column(self.window)
        widest = max(dock_layout.left_column_px(self.window.width()), self.left_px)
        if not left or left[0].width() <= widest:
            return
        beside = [dock for dock in self.window.findChildren(QDockWidget) if in_sight(dock)
                  and self.window.dockWidgetArea(dock) in (dock_layout.AREAS["right"], dock_layout.AREAS["bottom"])]
        if beside:
            extra = left[0].width() - widest
            self.window.resizeDocks([left[0], beside[0]], [widest, beside[0].width() + extra],
                                    Qt.Orientation.Horizontal)

    def _restore(self, state: QByteArray) -> None:
        in_sight_now = [dock for dock in self.window.findChildren(QDockWidget) if in_sight(dock)]
        in_front = [dock for dock in self.folded_fronts if dock not in in_sight_now] + in_sight_now   # latest last
        self.folded_fronts = []
        self.window.restoreState(state)
        # The docks it moves say so (dockLocationChanged), and the window then asks for the layout to be taken, a
        # turn later, before the sizes restored are laid out: back at 1366 px beside Learn that took the left
        # column at 364 px for its 334 (the fresh-clone run's drag-back test). A layout given back is not a new one.
        self.restoring = True
        QTimer.singleShot(0, self, self._restored)
        put_away_stale_bars(self.window)
        for dock in in_front:               # the tabs raised since stay in front
            dock.raise_()

    def _restored(self) -> None:
        self.restoring = False

    def keep_plots_legible(self) -> None:
        """After a resize: the Tokens table its rows, and every plot of attention and the bottom tabs its height."""
        docks = getattr(self.window, "docks", {})
        if docks.get(dock_layout.FRONT) is None or self.maximised is not None:
            return
        self._keep_prompt(docks)
        self.keep_rows()
        self._fold_or_unfold(docks)
        learn_placement.keep_beside(self.window)     # Learn's column folded where attention would be too narrow
        self.arranged.add(arrangement(self.window))

    def layout_asked(self) -> None:
        """After a dock or toolbar asked for another size: the prompt back at its height (a row of toolbars given
        up at 1366 px went to the prompt: 117 px for 86), Tokens its rows if it asks more; not while a mouse
        button is down, in case the person is dragging a separator."""
        docks = getattr(self.window, "docks", {})
        if QApplication.mouseButtons() != Qt.MouseButton.NoButton or self.maximised is not None or not docks:
            return
        self._keep_prompt(docks)
        self.keep_rows(asked_more=True)

    def _keep_prompt(self, docks: dict[str, QDockWidget]) -> None:
        """The prompt back at the height it was laid out at, the rest to attention: Qt handed a regrow to the
        prompt (shrunk to 800 x 600 and grown to 1300 x 800, the prompt was 270 px tall for three lines)."""
        prompt = docks.get("prompt")
        if (prompt is None or not self.prompt_px or prompt.height() <= self.prompt_px or prompt.isFloating()
                or self.window.dockWidgetArea(prompt) != dock_layout.AREAS["top"]):
            return
        # Split with a dock right under it; Qt leaves the split alone when that one is a tab of a group
        # (attention with the bottom tabs folded behind it), so the next is tried.
        under = [dock for dock in docks.values() if dock is not prompt and in_sight(dock)
                 and abs(dock.geometry().top() - prompt.geometry().bottom()) <= 2 * dock_layout.SEPARATOR_PX]
        for dock in under:
            extra = prompt.height() - self.prompt_px
            self.window.resizeDocks([prompt, dock], [self.prompt_px, dock.height() + extra], Qt.Orientation.Vertical)
            self.window.layout().activate()
            if prompt.height() <= self.prompt_px:
                return

    def keep_rows(self, asked_more: bool = False) -> None:
        """Tokens over Next token: the Tokens table its rows where Next token can give them (column_heights). Done
        after a resize and, `asked_more`, when Tokens asks more than before (a translation line over its table), never
        for a person's drag of the separator alone."""
        column = dock_layout.column_pair(self.window, getattr(self.window, "docks", {}))
        if not column or self.maximised is not None:
            return
        asked, before = column[0].sizeHint().height(), self.column_asked
        self.column_asked = asked
        if asked_more and asked <= before:
            return
        heights = [dock.height() for dock in column]
        if dock_layout.column_heights(column, heights) != heights:
            self.window.resizeDocks(column, dock_layout.column_heights(column, heights), Qt.Orientation.Vertical)

    def _fold_or_unfold(self, docks: dict[str, QDockWidget]) -> None:
        """Attention and the bottom tabs under it each as tall as their plots need: folded into one tab group
        where the window is too short for both, unfolded where it is tall enough again (and the docks folded are
        still where the fold put them). The room to unfold is the window's, not attention's: Qt may hand a
        regrow to the prompt."""
        above = docks[dock_layout.FRONT]
        under = dock_layout.under_front(self.window, docks)
        if under:
            heights = [above.height(), dock_layout.group_px(self.window, under[0])]     # as resizeDocks sets them
            # Folded only where the window too is short (the rule its layout was chosen by): the docks' heights
            # alone, read while a first layout settles, folded a just-opened 796 px window laid out stacked.
            if sum(heights) < 2 * dock_layout.BOTTOM_MIN_PX and not dock_layout.stacks(self.window):
                self.folded = (under, self.taken[1] if self.taken is not None else self.window.saveState())
                self.folded_fronts = [dock for dock in under if in_sight(dock)]
                self.folded_closed = self._closed()
                dock_layout.fold_under_front(self.window, docks, under)
            elif dock_layout.stack_heights(heights, self.under_px) != heights:
                self.window.resizeDocks([above, under[0]], dock_layout.stack_heights(heights, self.under_px),
                                        Qt.Orientation.Vertical)
        elif self.folded is not None and dock_layout.stacks(self.window):
            folded, state = self.folded
            self.folded = None
            if self._closed() == self.folded_closed and all(dock in dock_layout.tab_group(self.window, above)
                                                             for dock in folded):
                self._restore(state)
                QTimer.singleShot(0, self, self.keep_plots_legible)

    def eventFilter(self, watched, event) -> bool:
        kind = event.type()
        if watched is self.window and kind == QEvent.Type.Resize:
            self._give_back.start()
        elif watched is self.window and kind == QEvent.Type.LayoutRequest:
            self._asked_more.start()                        # a dock may ask more room (keep_rows)
        elif watched is self.window and kind == QEvent.Type.MouseButtonRelease:
            QTimer.singleShot(0, self, lambda: self.take(dragged=True))   # a separator dragged: the person's sizes
        elif watched is self.window and kind == QEvent.Type.ChildPolished and isinstance(event.child(), QTabBar):
            whole_titles(event.child())                     # a bar of tabbed docks, made by Qt as docks are tabbed
        return False

    # ----- one panel over the whole window ---------------------------------------------------
    def toggle_maximised(self, dock: QDockWidget) -> None:
        """Hide every other dock so that `dock` takes the window; a second call puts the layout back."""
        if self.maximised is not None:
            _, state = self.maximised
            self.maximised = None
            self.window.restoreState(state)
            put_away_stale_bars(self.window)
            QTimer.singleShot(0, self, self.take)
            return
        self.maximised = (dock, self.window.saveState())
        for other in self.window.findChildren(QDockWidget):
            if other is not dock and other.isVisible():
                other.hide()
        dock.setFloating(False)
        dock.show()
        dock.raise_()

    def state_to_save(self) -> QByteArray:
        """The layout to remember at quit: the one before a panel was maximised, or before the bottom tabs were
        folded (folded again if the window opens as short)."""
        if self.maximised is not None:
            return self.maximised[1]
        if self.folded is not None and self._closed() == self.folded_closed:
            return self.folded[1]
        return self.window.saveState()      # a dock closed or opened since the fold: the layout as it is

    def _closed(self) -> frozenset:
        """The names of the docks closed now."""
        return frozenset(dock.objectName() for dock in self.window.findChildren(QDockWidget) if dock.isHidden())
