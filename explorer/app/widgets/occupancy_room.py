"""The KV cache's Occupancy tab: its two occupancy plots and the paged blocks, side by side where the tab is wide
enough for both, the plots above the blocks where it is not, in a scroll area where even that leaves the plots'
views under MIN_PLOT_PX.

The plots' least size is worked out from their axes as drawn (each plot less its view) for the way they lie,
side by side or one above the other (OccupancyPlots places them by the figure's shape), and set on the figure,
so a short dock scrolls to the plots rather than squeezing them: at the window's least size on a 1366x768
screen the plots lay in a 244 x 267 px column beside the blocks, their views 53 px tall.
"""
from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import QEvent, QSize, Qt, QTimer
from PySide6.QtWidgets import QFrame, QScrollArea, QSplitter, QWidget

from explorer.app.widgets.adaptive import around_view, orient
from explorer.app.widgets.kv_occupancy import MIN_PLOT_PX, OccupancyPlots

AXES_PX = (70, 80)           # a plot's axes, title and margins (width, height), until measured
SPACING_PX = 12              # the figure's margins and the space between its plots


def occupancy_least(axes: list[tuple[int, int]], wide: bool) -> QSize:
    """The least size of the occupancy figure whose plots have these axes (width, height each), side by side
    (`wide`) or one above the other, for every view to keep MIN_PLOT_PX each way."""
    widths, heights = [a[0] + MIN_PLOT_PX for a in axes], [a[1] + MIN_PLOT_PX for a in axes]
    if wide:
        return QSize(sum(widths) + SPACING_PX, max(heights) + SPACING_PX)
    return QSize(max(widths) + SPACING_PX, sum(heights) + SPACING_PX)


class OccupancyRoom(QScrollArea):
    """`plots` and `blocks` in a splitter (`splitter`) that scrolls; `fit()` arranges them for the room."""

    def __init__(self, plots: OccupancyPlots, blocks: QWidget, block_view: pg.GraphicsView, parent=None) -> None:
        """`block_view`: the blocks' figure, inside `blocks`, kept tall and wide enough for its grid's view."""
        super().__init__(parent)
        self.plots, self.block_view = plots, block_view
        self.block_least = block_view.minimumSize()          # its least before its grid is measured
        self.axes_px = [AXES_PX, AXES_PX]
        splitter = self.splitter = QSplitter(Qt.Orientation.Horizontal)
        splitter.setChildrenCollapsible(False)
        splitter.addWidget(plots)
        splitter.addWidget(blocks)
        splitter.setStretchFactor(0, 2)
        splitter.setStretchFactor(1, 1)
        self.setWidgetResizable(True)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setWidget(splitter)
        self._fitting = QTimer(self, singleShot=True, interval=0)   # once Qt has laid the figure out
        self._fitting.timeout.connect(self.fit)
        plots.installEventFilter(self)

    def eventFilter(self, watched, event) -> bool:
        if watched is self.plots and event.type() in (QEvent.Type.Resize, QEvent.Type.Show):
            self._fitting.start()
        return super().eventFilter(watched, event)

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self._fitting.start()

    def least(self, wide: bool) -> QSize:
        """The plots' least size side by side (`wide`) or stacked, from their axes as last measured."""
        return occupancy_least(self.axes_px, wide)

    def fit(self) -> None:
        """The figure's least size for the way its plots lie, and the plots beside the blocks where the room's width
        holds both (else above them)."""
        self._measure_axes()
        self._fit_blocks()
        plots = self.plots
        plots.setMinimumSize(self.least(plots.width() >= plots.height()))
        room = self.maximumViewportSize()
        beside = (self.least(True).width() + self.splitter.handleWidth()
                  + self.splitter.widget(1).minimumSizeHint().width()) <= room.width()
        orient(self.splitter, room.width(), room.height(), weights=(2, 1), wide=beside)

    def _measure_axes(self) -> None:
        """Each built plot's axes, title and margins as laid out: its size less its view's."""
        for index, plot in enumerate((self.plots.layer_plot, self.plots.total_plot)):
            measured = around_view(plot) if plot is not None else None
            if measured is not None:
                self.axes_px[index] = measured

    def _fit_blocks(self) -> None:
        """The blocks' figure no smaller than its grid's axes, colour bar and a MIN_PLOT_PX view (above the plots,
        at its old least height, its view was 117 px tall)."""
        for item in self.block_view.items():
            if isinstance(item, pg.PlotItem) and not isinstance(item, pg.ColorBarItem):
                view = item.getViewBox()
                if view.width() > 1 and view.height() > 1:
                    frame = self.block_view.size() - view.size().toSize()
                    self.block_view.setMinimumSize(self.block_least.expandedTo(
                        QSize(frame.width() + MIN_PLOT_PX, frame.height() + MIN_PLOT_PX)))
