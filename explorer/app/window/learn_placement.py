"""Where the window puts the Learn panel: a dock on the right, beside the panels it talks about, opened from
Help ▸ Learn (`open_learn`), from the "?" on the title of a panel a stop names (`add_stop_buttons`), at that
stop, and on the first start (`open_on_first_start`). The panel itself is explorer.app.panels.learn.
"""
from __future__ import annotations

from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QDockWidget

from explorer.app.panels.learn import LearnPanel, stop_tip
from explorer.app.widgets.learn_tour import Stop, load_stops, stop_of_panel
from explorer.app.window.dock_layout import LEFT_PX, LEFT_SHARE, tabs_beside_column
from explorer.core.errors import ExplorerError

DOCK_PX = 400                      # the Learn dock's width beside the panels


def open_learn(window) -> LearnPanel:
    """Help ▸ Learn: the Learn dock, made once, beside the panels on the right, and brought forward."""
    dock = getattr(window, "learn_dock", None)
    if dock is None:
        dock = QDockWidget("Learn", window)
        dock.setObjectName("learn_dock")
        dock.setWidget(LearnPanel(window.session))
        window.learn_dock = dock
    if not dock.isVisible():
        # placed again each time it is opened: a closed dock keeps its old slot, which a View ▸ Reset Layout
        # since then puts under the panels, where the window asks for more height than a 768 px screen
        if getattr(window, "docks", None):
            tabs_beside_column(window, window.docks)     # the column beside the bottom tabs, not over them
        window.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, dock, Qt.Orientation.Horizontal)
        _share_width(window, dock)
    dock.show()
    dock.raise_()
    return dock.widget()


def _share_width(window, dock) -> None:
    """The Learn column DOCK_PX wide, the left column its default width, the panels between them the rest
    (given alone, Qt hands the new column's width to the left column and squeezes the panels); again once
    the window has laid the new dock out."""
    def share() -> None:
        left_px = int(min(max(LEFT_SHARE * window.width(), LEFT_PX[0]), LEFT_PX[1]))
        docks = [d for d in (window.docks.get("tokens"), window.docks.get("attention"))
                 if d is not None and not d.isFloating() and d.isVisible()]
        widths = [left_px, window.width() - left_px - DOCK_PX][-len(docks):] if docks else []
        window.resizeDocks(docks + [dock], widths + [DOCK_PX], Qt.Orientation.Horizontal)

    share()
    QTimer.singleShot(0, window, share)


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
