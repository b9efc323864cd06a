"""The default arrangement of the main window's docks, sized for the screen it opens on.

The prompt across the top, a few lines high; tokens over the next-token candidates in a
left column that runs down to the status bar; attention large on the right, over the
per-matrix panels tabbed along the bottom. The window takes the screen's available
geometry (less its frame), and the docks share it by what they need: the left column
a quarter of the width, the bottom tabs enough height for their plots, attention the rest.
Where the screen is too short for two rows of plots (1366×768), the bottom tabs go
behind attention, which stays the front tab and has the whole height: one plot panel
legible at a time rather than two strips of ticks. View ▸ Reset Layout
puts everything back the same way. Panels this table does not name join the bottom
tabs, behind the others, built when first shown (four docks stacked beside attention
left none of them room). A dock that is no panel's (Help ▸ Learn) and is open keeps its column
at the right edge, beside the panels, COLUMN_PX wide as when it was first placed, and the whole height under
the prompt: the bottom tabs then sit under attention in the right area (tabs_beside_column) rather than across
the window's width.
"""
from __future__ import annotations

import itertools

from PySide6.QtCore import QRect, QSize, Qt, QTimer
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QDockWidget, QMainWindow, QToolBar

from explorer.app.panels import registry
from explorer.app.panels.base import Panel
from explorer.app.window.dock_tab_bars import dock_tab_bars, relaid, runs_along

TABBED_AREAS = ("bottom",)
AREAS = {"top": Qt.DockWidgetArea.TopDockWidgetArea, "left": Qt.DockWidgetArea.LeftDockWidgetArea,
         "right": Qt.DockWidgetArea.RightDockWidgetArea, "bottom": Qt.DockWidgetArea.BottomDockWidgetArea}
PROMPT_LINES = 3
LEFT_SHARE, LEFT_PX = 0.25, (330, 520)          # the left column: a share of the width, within these
BOTTOM_SHARE, BOTTOM_MIN_PX = 0.43, 330         # the bottom tabs: a share of the height below the prompt (their
                                                # bar of tabs in it), the rest to attention, the main map; at
                                                # 1920x1080 a 360 px dock, the Experiments panel's least and room
                                                # for the Residual stream's table and plot (half: the map 278 px)
SEPARATOR_PX = 6                                # between two dock areas
SHORT_PX = 700                                  # a screen this tall has room for two rows of toolbars at most
LEAST_WIDTH_PX = 760                            # the window's least width: within an 800 px screen, and wide
                                                # enough that attention's map and grid keep 120 px views (at the
                                                # layout's own least, 572 px, the map's view was 53 x 97 px)
FRONT = "attention"                             # the front tab where the bottom tabs join it
TOKENS_TO_CANDIDATES = (2, 3)                   # the left column's split between tokens and next token
COLUMN = ("tokens", "next_token")               # the left column, top to bottom
TITLE_BAR_PX = 32                               # a window manager's title bar, before the window is shown
COLUMN_PX = 400                                 # a column beside the panels (Help ▸ Learn), as a layout places it


def area_of(name: str, stacked: bool = True) -> str:
    """The default area of a panel. `stacked` False (a short screen): the bottom tabs join attention's
    area on the right, behind it, beside the left column (in the bottom area beside that column, Qt
    widened the column a little at every relayout)."""
    spec = registry.spec(name)                  # each panel's row says its area; the prompt's is the top
    area = "top" if name == "prompt" else spec.area if spec is not None else TABBED_AREAS[0]
    return "right" if not stacked and area in TABBED_AREAS else area


def prompt_px(window: QMainWindow) -> int:
    """PROMPT_LINES of text, the dock's title and the editor's frame."""
    return PROMPT_LINES * window.fontMetrics().lineSpacing() + 34


def toolbar_rows(widths: list[int], width: int, most: int | None = None) -> list[int]:
    """Where each row of toolbars starts (their indices), the toolbars of `widths` filling rows of `width`
    left to right in their order; a toolbar wider than a row has a row of its own. No more than `most` rows
    where given: then the rows that fold the least behind a toolbar's » button (at 800 x 600 a third row of
    toolbars left the docks too little height: the window's least height was 621 px)."""
    starts, used = [], width
    for index, bar_width in enumerate(widths):
        if used + bar_width > width:
            starts.append(index)
            used = 0
        used += bar_width
    if most is None or len(starts) <= most:
        return starts

    def folded(breaks: tuple[int, ...]) -> int:
        edges = (0, *breaks, len(widths))
        return max(sum(widths[a:b]) - width for a, b in zip(edges, edges[1:]))
    return [0, *min(itertools.combinations(range(1, len(widths)), most - 1), key=folded)]


def flow_toolbars(window: QMainWindow) -> None:
    """The toolbars in the rows the window's width gives them (chrome_px counts those) before the docks are
    sized: flowed after the window was shown, at launch, their rows given up went to the left column after its
    split (Tokens 322 px tall for the 304 its rows ask, and a Reset Layout gives)."""
    rows = getattr(window, "toolbar_rows", None)
    if rows is not None:
        rows.flow()


def toolbar_rows_most(window: QMainWindow) -> int | None:
    """The most rows of toolbars the window's screen has room for: two on a screen under SHORT_PX tall."""
    return 2 if available_geometry(window).height() < SHORT_PX else None


def top_toolbars(window: QMainWindow) -> list[QToolBar]:
    """The toolbars shown docked along the top of the window, in their order."""
    return [bar for bar in window.findChildren(QToolBar) if not bar.isHidden() and not bar.isFloating()
            and window.toolBarArea(bar) == Qt.ToolBarArea.TopToolBarArea]


def chrome_px(window: QMainWindow) -> int:
    """The height the menu bar, the toolbars (in as many rows as their width needs, see toolbar_rows) and
    the status bar take."""
    bars = top_toolbars(window)
    rows = len(toolbar_rows([bar.sizeHint().width() for bar in bars], window.width(), toolbar_rows_most(window)))
    toolbars = rows * max((bar.sizeHint().height() for bar in bars), default=0)
    return window.menuBar().sizeHint().height() + toolbars + window.statusBar().sizeHint().height()


def below_prompt_px(window: QMainWindow) -> int:
    """What the docks under the prompt share, top to bottom."""
    return window.height() - chrome_px(window) - prompt_px(window) - 2 * SEPARATOR_PX


def stacks(window: QMainWindow) -> bool:
    """Whether attention and the bottom tabs both fit, one over the other, each with legible plots."""
    return below_prompt_px(window) >= 2 * BOTTOM_MIN_PX


def available_geometry(window: QMainWindow) -> QRect:
    """The screen the window is on (the primary one before it is shown), less panels and task bars."""
    screen = window.screen() or QGuiApplication.primaryScreen()
    return screen.availableGeometry()


def frame_size(window: QMainWindow) -> QSize:
    """What a window manager's frame adds to the window. Read from the frame geometry once shown; that lags
    a resize of the window until the frame follows, when the difference can be anything (a fit right after
    the window had grown to 2,963 px left it 2,676 px tall), so a difference no frame has counts as a title
    bar alone."""
    if QGuiApplication.platformName() in ("offscreen", "minimal") and not window.isVisible():
        return QSize(0, 0)
    frame = window.frameGeometry().size() - window.geometry().size() if window.isVisible() else QSize(0, -1)
    if 0 <= frame.width() <= 4 * TITLE_BAR_PX and 0 <= frame.height() <= 4 * TITLE_BAR_PX:
        return frame
    return QSize(0, TITLE_BAR_PX)


def fit_to_screen(window: QMainWindow, available: QRect | None = None) -> None:
    """Make the window fill `available` (default: its screen's), frame included."""
    available = available if available is not None else available_geometry(window)
    frame = frame_size(window)
    window.resize(available.width() - frame.width(), available.height() - frame.height())
    window.move(available.topLeft())


def keep_on_screen(window: QMainWindow, available: QRect | None = None) -> bool:
    """A restored window that no longer fits its screen (saved on a larger one, or a frame's pixel
    over) is moved onto it and, where it must be, made smaller. False when it had to be made smaller."""
    available = available if available is not None else available_geometry(window)
    frame = window.frameGeometry()
    if available.contains(frame):
        return True
    border = frame.size() - window.geometry().size()
    width = min(frame.width(), available.width()) - border.width()
    height = min(frame.height(), available.height()) - border.height()
    window.resize(width, height)
    x = min(max(frame.x(), available.x()), available.right() + 1 - width - border.width())
    y = min(max(frame.y(), available.y()), available.bottom() + 1 - height - border.height())
    window.move(x, y)
    return frame.width() <= available.width() and frame.height() <= available.height()


def fits(size: QSize | None, window: QMainWindow) -> bool:
    """Whether a window of `size` (None: unknown, taken to fit) fits the screen's available area."""
    available = available_geometry(window)
    return size is None or (size.width() <= available.width() and size.height() <= available.height())


def columns_beside(window: QMainWindow, docks: dict[str, QDockWidget]) -> list[QDockWidget]:
    """The open, docked docks of the window that are no panel's (Learn): each keeps a column of its own."""
    panels = set(docks.values())
    return [dock for dock in window.findChildren(QDockWidget) if dock.parent() is window and dock not in panels
            and dock.isVisible() and not dock.isFloating()]


def keep_column_px(dock: QDockWidget) -> None:
    """Remember the width a column beside the panels has now (within its own minimum and the left column's
    maximum) for size_docks, which sizes it again once the window is shown."""
    dock.setProperty("column_px", min(max(dock.width(), dock.minimumSizeHint().width()), LEFT_PX[1]))


def tabs_beside_column(window: QMainWindow, docks: dict[str, QDockWidget]) -> None:
    """The bottom tabs moved up into the right area, under attention, the same tab in front and the two as
    high as they were: a column added at the right edge (Learn) then runs from under the prompt to the status
    bar beside both. In the bottom area the tabs ran the whole width of the window, under the column too, and
    left it the top row alone (330 px of a 1080 px screen). Left as they are where attention is not docked on
    the right (the person's own arrangement)."""
    above = docks.get(FRONT)
    if above is None or above.isFloating() or window.dockWidgetArea(above) != AREAS["right"]:
        return
    group = [dock for dock in docks.values() if not dock.isFloating()
             and window.dockWidgetArea(dock) == AREAS[TABBED_AREAS[0]]]
    if not group:
        return
    in_front = next((dock for dock in group if dock.isVisible() and not dock.visibleRegion().isEmpty()), None)
    heights = [above.height(), max((dock.height() for dock in group if dock.isVisible()), default=0)]
    window.splitDockWidget(above, group[0], Qt.Orientation.Vertical)
    for dock in group[1:]:
        window.tabifyDockWidget(group[0], dock)
    if in_front is not None:
        in_front.raise_()
    if all(heights):
        window.resizeDocks([above, group[0]], heights, Qt.Orientation.Vertical)


def tab_group(window: QMainWindow, dock: QDockWidget) -> list[QDockWidget]:
    """`dock` and the docks tabbed with it."""
    return [dock, *window.tabifiedDockWidgets(dock)]


def under_front(window: QMainWindow, docks: dict[str, QDockWidget]) -> list[QDockWidget]:
    """The panels docked under attention, outside its tab group: the bottom tabs, in the bottom area or split
    under attention in the right area (tabs_beside_column), their front tab first. Empty where attention is
    closed or floating, or where nothing lies under it (the short screen's layout, a folded one)."""
    above = docks.get(FRONT)
    if above is None or above.isHidden() or above.isFloating():
        return []
    group, top, areas = set(tab_group(window, above)), above.geometry(), (AREAS["right"], AREAS["bottom"])

    def lies_under(rect: QRect) -> bool:
        return rect.top() >= top.bottom() and rect.left() < top.right() and rect.right() > top.left()
    fronts = [dock for dock in docks.values() if dock not in group and dock.isVisible() and not dock.isFloating()
              and not dock.visibleRegion().isEmpty() and window.dockWidgetArea(dock) in areas
              and lies_under(dock.geometry())]
    return [dock for front in fronts for dock in tab_group(window, front) if not dock.isHidden()]


def fold_under_front(window: QMainWindow, docks: dict[str, QDockWidget], under: list[QDockWidget]) -> None:
    """The docks `under` attention tabbed behind it, attention in front: the layout of a screen too short for
    two rows of plots (see stacks), for a window shrunk below that height."""
    above = docks[FRONT]
    for dock in under:
        window.tabifyDockWidget(above, dock)
    above.raise_()


def group_px(window: QMainWindow, dock: QDockWidget) -> int:
    """The height of `dock`'s tab group as resizeDocks sets it: the dock's and its bar of tabs' (asked 360 px,
    the bottom tabs' front dock was 329 px tall over a 31 px bar)."""
    bars = [bar.height() for bar in dock_tab_bars(window)
            if not bar.isHidden() and bar.count() and runs_along(bar, dock)]
    return dock.height() + max(bars, default=0)


def stack_heights(heights: list[int], under_px: int = 0) -> list[int]:
    """Attention's and the bottom tabs' heights, of the same sum, each at least BOTTOM_MIN_PX where the sum allows
    both, the bottom tabs `under_px` (the height they were laid out at; 0: as they are) where attention keeps its
    least: Qt takes a shrink off both alike, whatever they need, and the bottom tabs' plots need their height
    whatever the width (Why this token's map 100 px tall after a shrink to 760 x 1080), attention has the rest."""
    total, least = sum(heights), BOTTOM_MIN_PX
    if total < 2 * least:
        return heights
    lower = min(max(under_px or heights[1], least), total - least)
    return [total - lower, lower]


def place_hidden(window: QMainWindow, docks: dict[str, QDockWidget], stacked: bool) -> dict[str, list[QDockWidget]]:
    """Every dock taken out (which hides it) and put back in its default area, hidden, those of a tabbed
    area tabbed behind the first; the docks by area, attention first."""
    by_area: dict[str, list[QDockWidget]] = {}
    for name, dock in sorted(docks.items(), key=lambda item: item[0] != FRONT):
        window.removeDockWidget(dock)
        window.addDockWidget(AREAS[area_of(name, stacked)], dock, Qt.Orientation.Vertical)
        dock.setFloating(False)
        by_area.setdefault(area_of(name, stacked), []).append(dock)
    for area in TABBED_AREAS + ("right",):
        group = by_area.get(area, [])
        for dock in group[1:]:
            window.tabifyDockWidget(group[0], dock)
    return by_area


def arrange(window: QMainWindow, docks: dict[str, QDockWidget], available: QRect | None = None) -> None:
    """Every dock in its default area, the bottom ones tabbed with the first in front, sized for the screen;
    the docks that are no panel's (Learn) each in a column at the right edge, beside the panels."""
    beside = columns_beside(window, docks)
    for dock in beside:
        # Put back after the panels: re-added one by one in their areas, the panels stacked under it, and
        # with its minimum height over attention's the window asked for 781 px at a 768 px screen. At the
        # width it is first placed at: kept at the width it had, a column squeezed by a wide panel (the
        # translator's Q/K/V) stayed squeezed, and the left column with it, after every Reset Layout.
        dock.setProperty("column_px", COLUMN_PX)
        window.removeDockWidget(dock)
    fit_to_screen(window, available)
    flow_toolbars(window)
    stacked = stacks(window)
    window.setCorner(Qt.Corner.BottomLeftCorner, Qt.DockWidgetArea.LeftDockWidgetArea)
    window.setCorner(Qt.Corner.TopLeftCorner, Qt.DockWidgetArea.TopDockWidgetArea)
    window.setCorner(Qt.Corner.TopRightCorner, Qt.DockWidgetArea.TopDockWidgetArea)
    with relaid(window):
        by_area = place_hidden(window, docks, stacked)
        if beside:
            tabs_beside_column(window, docks)
        for dock in beside:
            window.addDockWidget(AREAS["right"], dock, Qt.Orientation.Horizontal)
    # Shown only once every area holds what it will hold: shown as they were added, the docks of one area
    # stood one over the other until tabbed, and their minimum heights summed grew the window (no window
    # manager caps it) to 2,963 px on the way, and a fit right after such a growth (see frame_size) once
    # left it 2,680 px tall at a 768 px screen.
    for dock in [*docks.values(), *beside]:
        dock.show()
    for area in TABBED_AREAS + ("right",):
        if len(by_area.get(area, [])) > 1:
            by_area[area][0].raise_()
    if beside:
        by_area["beside"] = beside
    window.dock_groups = by_area               # size_docks again once shown (see MainWindow.showEvent)
    # Fit again now that every area holds what it will hold.
    fit_to_screen(window, available)
    size_docks(window, by_area)
    # Again once the window has its size: before it is shown, Qt scales these to a layout of its own.
    QTimer.singleShot(0, window, lambda: (keep_on_screen(window, available), size_docks(window, by_area)))


def size_docks(window: QMainWindow, by_area: dict[str, list[QDockWidget]]) -> None:
    """The prompt a few lines high, the left column a share of the width, the bottom tabs a share of
    the height that remains (never less than their plots need), attention the rest. Each split is
    given both of its sides: without a central widget, Qt hands a lone size's remainder back to it."""
    top, left, right, bottom = ([*by_area.get(area, [])][:1] for area in ("top", "left", "right", "bottom"))
    below_prompt = below_prompt_px(window)
    bottom_px = int(max(BOTTOM_SHARE * below_prompt, BOTTOM_MIN_PX)) if right and bottom else below_prompt
    rows = [(top, prompt_px(window)), (right, below_prompt - bottom_px if bottom else below_prompt),
            (bottom, bottom_px)]
    rows = [(docks[0], size) for docks, size in rows if docks]
    window.resizeDocks([d for d, _ in rows], [s for _, s in rows], Qt.Orientation.Vertical)
    left_px = left_column_px(window.width())
    panels = right or bottom
    columns = [dock for dock in by_area.get("beside", []) if dock.isVisible() and not dock.isFloating()]
    widths = [int(dock.property("column_px") or 0) for dock in columns]
    left, left_widths = ([left[0]], [left_px]) if left and panels else ([], [])
    if panels and (left or columns):
        middle = window.width() - sum(left_widths) - sum(widths)
        window.resizeDocks(left + [panels[0]] + columns, left_widths + [middle] + widths, Qt.Orientation.Horizontal)
    column = by_area.get("left", [])
    if len(column) == 2:
        window.resizeDocks(column, column_split(column, sum(d.height() for d in column)), Qt.Orientation.Vertical)


def left_column_px(width: int) -> int:
    """The left column's width in a window `width` wide: its share, within LEFT_PX."""
    return int(min(max(LEFT_SHARE * width, LEFT_PX[0]), LEFT_PX[1]))


def column_pair(window: QMainWindow, docks: dict[str, QDockWidget]) -> list[QDockWidget]:
    """Tokens and Next token where they stand one over the other in the left column, else [] (two tabs of one
    group share one rectangle). Asked before the window is first exposed too, when nothing is in sight yet."""
    column = [docks.get(name) for name in COLUMN]
    if any(dock is None or dock.isFloating() or not dock.isVisible()
           or window.dockWidgetArea(dock) != AREAS["left"] for dock in column):
        return []
    upper, lower = (dock.geometry() for dock in column)
    return column if upper.left() == lower.left() and lower.top() > upper.bottom() else []


def column_heights(column: list[QDockWidget], heights: list[int]) -> list[int]:
    """Tokens over Next token of the same sum, Tokens at least the height it asks (its table's rows) where Next
    token keeps what it needs to be read (least_to_read), and at most what leaves Next token that: Qt takes a
    shrink, and a fit on a screen that turned out shorter, off both. Tokens given its rows first, and asking more
    once its warning of characters left out came, left the translator's candidates 2 rows at 1366x768."""
    upper, lower = column
    total = sum(heights)
    lower_px = min(least_to_read(lower), total - upper.minimumSizeHint().height())
    upper_px = min(max(heights[0], upper.sizeHint().height()), total - lower_px)
    return heights if upper_px == heights[0] else [upper_px, total - upper_px]


def least_to_read(dock: QDockWidget) -> int:
    """The height `dock` keeps in a column where it can: its minimum, or more where its panel needs more to be read
    (Panel.height_to_read: Next token's candidate rows)."""
    panel = dock.widget()
    wanted = panel.height_to_read() if isinstance(panel, Panel) else None
    least = dock.minimumSizeHint().height()
    return least if wanted is None else max(least, dock.height() - panel.height() + wanted)


def column_split(column: list[QDockWidget], height: int) -> list[int]:
    """Tokens over Next token in the left column's `height`: tokens its share, or what it asks for (its table's
    rows) where the share is less, as long as Next token keeps what it needs to be read (least_to_read). At
    1366x768 two fifths of the column left the token table two rows."""
    upper, lower = column
    share = height * TOKENS_TO_CANDIDATES[0] // sum(TOKENS_TO_CANDIDATES)
    upper_px = min(max(share, upper.sizeHint().height()), height - least_to_read(lower))
    upper_px = max(upper_px, min(share, upper.minimumSizeHint().height()))
    return [upper_px, height - upper_px]
