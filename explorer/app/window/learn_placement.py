"""Where the window puts the Learn panel: a dock on the right, beside the panels it talks about, opened from
Help ▸ Learn (`open_learn`), from the "?" on the title of a panel a stop names (`add_stop_buttons`), at that
stop, on the first start (`open_on_first_start`), and on a relaunch where it was open at the quit, where the
placement above puts it (`after_restore`). The panel itself is
explorer.app.panels.learn.

Where the window is too narrow for the column beside the panels (attention would have less than PANELS_MIN_PX),
Learn folds: it is tabbed with attention instead, one click away, and goes back to its column once the window
is wide enough again (`keep_beside`, after every resize). At the window's minimum width (about 880 px) the
column left attention 330 px, and its grid of heads, beside the map, 2 px.
"""
from __future__ import annotations

from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QDockWidget

from explorer.app.panels.learn import LearnPanel, stop_tip
from explorer.app.widgets.learn_tour import Stop, load_stops, stop_of_panel
from explorer.app.window.dock_layout import (
    AREAS,
    COLUMN,
    COLUMN_PX,
    FRONT,
    SEPARATOR_PX,
    keep_column_px,
    left_column_px,
    tab_group,
    tabs_beside_column,
)
from explorer.core.errors import ExplorerError

DOCK_PX = COLUMN_PX                # the Learn dock's width beside the panels
# Attention's least width beside the Learn column: its map and its grid of heads side by side, each plot at least
# 120 px wide with its axes and colour bars (the grid's axes and bars take about 150 px of its share).
PANELS_MIN_PX = 520


def learn_dock(window) -> QDockWidget:
    """The window's Learn dock, made once (placed by `open_learn`, or by a restored layout)."""
    dock = getattr(window, "learn_dock", None)
    if dock is None:
        dock = QDockWidget("Learn", window)
        dock.setObjectName("learn_dock")
        dock.setWidget(LearnPanel(window.session))
        window.learn_dock = dock
    return dock


def open_learn(window) -> LearnPanel:
    """Help ▸ Learn: the Learn dock, made once, beside the panels on the right, and brought forward."""
    dock = learn_dock(window)
    if not dock.isVisible():
        # placed again each time it is opened: a closed dock keeps its old slot, which a View ▸ Reset Layout
        # since then puts under the panels, where the window asks for more height than a 768 px screen
        attention = _attention_on_the_right(window)
        if attention is not None and room_beside(window, DOCK_PX) < PANELS_MIN_PX:
            dock.setProperty("column_px", DOCK_PX)
            window.tabifyDockWidget(attention, dock)        # folded: the window is too narrow for the column
        else:
            _place_column(window, dock, DOCK_PX)
    dock.show()
    dock.raise_()
    return dock.widget()


def _place_column(window, dock, px: int) -> None:
    """`dock` a column `px` wide at the right edge, beside the panels."""
    if getattr(window, "docks", None):
        tabs_beside_column(window, window.docks)     # the column beside the bottom tabs, not over them
    window.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, dock, Qt.Orientation.Horizontal)
    dock.setProperty("column_px", px)            # the width it goes back to once folded (keep_beside)
    dock.show()             # shown and laid out before it is shared: a hidden dock's share is not taken
    _share_width(window, dock, px)


def _attention_on_the_right(window):
    """Attention, open and docked in the right area (the default layouts), else None (the person's own)."""
    attention = getattr(window, "docks", {}).get(FRONT)
    if attention is None or attention.isHidden() or attention.isFloating():
        return None
    return attention if window.dockWidgetArea(attention) == AREAS["right"] else None


def room_beside(window, px: int) -> int:
    """The width attention would have beside a column `px` wide at the right edge: the window's, less the left
    column's (when open) at the width a layout gives it, the column and the separators between the three."""
    docks = getattr(window, "docks", {})
    left = any(dock is not None and dock.isVisible() and not dock.isFloating()
               and window.dockWidgetArea(dock) == AREAS["left"] for dock in map(docks.get, COLUMN))
    return window.width() - (left_column_px(window.width()) + SEPARATOR_PX if left else 0) - px - SEPARATOR_PX


def keep_beside(window) -> None:
    """After a resize: Learn, a column beside the panels, folded into attention's tabs (behind the tab in front)
    where attention has less than PANELS_MIN_PX; folded, back in its column where the window has room again,
    the tab it covered in front again. So too where a layout given back was made without Learn (the one before
    the bottom tabs folded, Learn opened since) and Qt put it between attention and the bottom tabs."""
    dock, attention = getattr(window, "learn_dock", None), _attention_on_the_right(window)
    if (dock is None or attention is None or dock.isHidden() or dock.isFloating()
            or window.dockWidgetArea(dock) != AREAS["right"]):
        return
    group = tab_group(window, attention)
    folded = dock in group
    in_sight = not dock.visibleRegion().isEmpty()
    out_of_place = in_sight and dock.geometry().left() <= attention.geometry().right()
    # open, not a tab, attention in sight but Learn nowhere: a layout saved with Learn folded came back with an
    # empty slot above attention and the dock off the window (drive 16, every relaunch at 1366 px)
    lost = (not folded and not in_sight and not window.tabifiedDockWidgets(dock)
            and not attention.visibleRegion().isEmpty())
    if folded or out_of_place or lost:  # in sight but not a column beside attention (and laid out: in sight)
        _place_again(window, dock, attention, group, folded)
        return
    # Folded by the window's width, as _place_again and open_learn decide, not by attention's width now: just
    # after the column is placed that is the width before (427 px for 1022 on a relaunch at 1366 px), and a
    # relaunch folded Learn again at once, a blank strip where it stood (drive 16)
    if not dock.property("column_px"):
        keep_column_px(dock)            # a column placed by a layout made before (squeezed by now, but its own)
    if room_beside(window, int(dock.property("column_px"))) < PANELS_MIN_PX:
        shown = [d for d in group if d.isVisible() and not d.visibleRegion().isEmpty()]
        front = shown[0] if shown else attention
        window.tabifyDockWidget(attention, dock)
        front.raise_()


def _place_again(window, dock, attention, group, folded: bool) -> None:
    """Learn, folded into attention's tabs or out of its place, back in its column where the window has room
    for it, else folded."""
    px = int(dock.property("column_px") or DOCK_PX)
    if room_beside(window, px) < PANELS_MIN_PX:
        if not folded:
            window.tabifyDockWidget(attention, dock)
            attention.raise_()
        return
    covered = folded and not dock.visibleRegion().isEmpty()
    window.removeDockWidget(dock)
    _place_column(window, dock, px)
    dock.show()
    if covered:
        next((d for d in group if d is not dock and d.isVisible()), attention).raise_()


def _share_width(window, dock, px: int = DOCK_PX) -> None:
    """The Learn column `px` wide, the left column its default width, the panels between them the rest
    (given alone, Qt hands the new column's width to the left column and squeezes the panels); again once
    the window has laid the new dock out, and that layout kept as the one a regrow gives back (DockShares)."""
    def share() -> None:
        # laid out first: shared before the window's layout had placed the new dock (a loaded machine ran the
        # timer below before that), the share was dropped and Learn kept Qt's 364 px of a 1366 px window
        window.layout().activate()
        left_px = left_column_px(window.width())
        docks = [d for d in (window.docks.get("tokens"), window.docks.get("attention"))
                 if d is not None and not d.isFloating() and d.isVisible()]
        widths = [left_px, window.width() - left_px - px][-len(docks):] if docks else []
        window.resizeDocks(docks + [dock], widths + [px], Qt.Orientation.Horizontal)
        window.layout().activate()

    def share_and_keep() -> None:
        share()
        shares = getattr(window, "dock_shares", None)
        if shares is not None:
            shares.take()           # the layout given back after a shrink: taken before this share, Learn had 364 px
    share()
    QTimer.singleShot(0, window, share_and_keep)


def open_at_quit(window) -> int | None:
    """The stop the Learn dock shows when it is open (in sight or behind a tab), else None (learn_open_at)."""
    dock = getattr(window, "learn_dock", None)
    return dock.widget().index if dock is not None and dock.toggleViewAction().isChecked() else None


def after_restore(window, index: int | None) -> None:
    """Learn, open at the last quit, opened again at stop `index` after the saved layout is restored, placed as
    Help ▸ Learn places it: a column beside the panels, or folded into attention's tabs where the window is too
    narrow. It is made after the restore, so the layout saved does not place it: a layout saved with Learn
    folded came back with an empty slot above attention and the dock off the window (drive 16, at 1366 px)."""
    if index is not None:
        open_learn(window).go_to(index)


def open_stop(window, index: int) -> LearnPanel:
    """The Learn dock, opened at stop `index` (only the page turns: the window's state stays as it is)."""
    panel = open_learn(window)
    panel.go_to(index)
    return panel


def add_stop_buttons(window, stops: tuple[Stop, ...] | None = None) -> None:
    """A "?" on the title bar of every dock that a stop names in its 'panels', opening Learn at that stop."""
    try:
        stops = stops if stops is not None else load_stops()
        index_of = stop_of_panel(stops)
    except ExplorerError:
        return              # Help ▸ Learn says why when it is opened; the panels work without their "?"
    for name, index in index_of.items():
        dock = window.docks.get(name)
        if dock is not None and hasattr(dock, "add_learn_button"):
            dock.add_learn_button(lambda _=False, i=index: open_stop(window, i),
                                  stop_tip(stops[index], index))


def open_on_first_start(window, settings) -> bool:
    """Learn beside the panels on the first start in a configuration: none saved the window yet and Learn
    was never opened this way (AppSettings.learn_seen), so it opens once. True when it was opened now."""
    if settings.learn_seen or settings.geometry() is not None:
        return False
    settings.learn_seen = True
    open_learn(window)
    return True
