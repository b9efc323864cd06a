"""The all-heads grid drawn on its colour scales (views.grid_scales): a layer of probabilities and a layer
whose kernel made its weights signed are each drawn on their own scale, and a colour bar per scale,
labelled with its layers, says which.

The heat map's own image and colour bar draw the first scale; each other scale is an image of its layers
alone (the rest transparent) over the same cells, with a colour bar under the first (the bars share the
height of the tiles, so the legend takes no more width than one bar however narrow the grid), or every bar
in a layout of the caller's (the panel's, beside its grid, which scrolls: the bars stay in sight). A grid on
one scale (every softmax grid, scores, log10) is drawn as before: one image, one bar, no label.
figures' full grid (every export of it: the panel's, the CLI's, the API's) is drawn so.
"""
from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtGui import QTransform

from explorer.drawing.colours import signed_colormap
from explorer.drawing.heatmap import Heatmap
from explorer.drawing.maxima import MaximaImage, diverging
from explorer.views.grid import Mosaic
from explorer.views.grid_scales import LayerScale, layer_scales, scale_image
from explorer.views.maps import grid_image

BAR_WIDTH = 12               # px, as the heat map's own colour bar
BAR_CELL = (2, 5)            # where pyqtgraph puts a plot's colour bar in its layout: the view's row, after its axis


class GridLegend:
    """Draws a Mosaic on `heatmap` (a grid's Heatmap) with a colour scale per kind of layer, and a colour bar
    per scale labelled with its layers, one under the other in `legend` where given (the heat map's own bar
    too), else beside the tiles. `scales` are those drawn last."""

    def __init__(self, heatmap: Heatmap, legend: pg.GraphicsLayout | None = None) -> None:
        self.heatmap = heatmap
        self.legend = legend
        self.images: list[MaximaImage] = []      # the scales after the first, in order
        self.bars: list[pg.ColorBarItem] = []
        self.scales: list[LayerScale] = []
        self.stack: pg.GraphicsLayout | None = legend   # the bars, one under the other (without `legend`: while
        # there are several)

    def show(self, grid: Mosaic, values: str, log: bool, keep_view: bool = True) -> list[LayerScale]:
        """Draw `grid` of `values` ("weights" or "scores"; `log`: log10 of the weights), its layers L0, L1, ...
        down the left axis and its heads H0, H1, ... along the top (the one place the grid's axes are named)."""
        heatmap = self.heatmap
        signed = values == "weights" and not log      # weights that a kernel may have made negative
        drawn = grid_image(grid, values, log)          # once per redraw: every scale's image and levels read it
        scales = layer_scales(grid, values, log, drawn)
        first = scales[0]
        heatmap.set_matrix(scale_image(grid, first, values, log, drawn), first.levels, keep_view=keep_view,
                           signed=signed)
        own = heatmap.colorbar
        if self.legend is not None and own is not None and own.parentItem() is not self.legend:
            heatmap.plot.layout.removeItem(own)          # made in the plot with the first data: into the legend
            scene = own.scene()
            own.setParentItem(None)
            if scene is not None:                        # out of the plot's scene first: Qt crashed moving it over
                scene.removeItem(own)
            self.legend.addItem(own, row=0, col=0)
        self._keep(len(scales) - 1)
        for image, bar, scale in zip(self.images, self.bars, scales[1:]):
            below_zero = signed and scale.levels[0] < 0.0
            bar.setColorMap(signed_colormap(scale.levels) if below_zero else heatmap.base_colormap)
            image.signed = below_zero or diverging(scale.levels)
            image.setImage(scale_image(grid, scale, values, log, drawn), levels=scale.levels, autoLevels=False)
            bar.setLevels(scale.levels)
            _label(bar, scale.named)
        if heatmap.colorbar is not None:
            _label(heatmap.colorbar, first.named if len(scales) > 1 else "")
        heatmap.axes["left"].set_labels(*grid.row_labels())
        heatmap.axes["top"].set_labels(grid.head_labels(), grid.head_centres())
        self.set_opacity(heatmap.image.opacity())
        self.scales = scales
        return scales

    def set_opacity(self, opacity: float) -> None:
        """Every scale's image drawn at `opacity` (a grid of the step before, dimmed)."""
        self.heatmap.image.setOpacity(opacity)
        for image in self.images:
            image.setOpacity(opacity)

    def clear(self) -> None:
        """No scale beyond the heat map's own (Heatmap.clear clears that one)."""
        self._keep(0)
        if self.heatmap.colorbar is not None:
            _label(self.heatmap.colorbar, "")
        self.scales = []

    def _keep(self, count: int) -> None:
        """Exactly `count` images and colour bars beyond the heat map's own."""
        plot = self.heatmap.plot
        while len(self.images) > count:
            image, bar = self.images.pop(), self.bars.pop()
            plot.removeItem(image)
            self.stack.removeItem(bar)
        if count == 0 and self.stack is not None and self.legend is None:
            self._unstack()
        while len(self.images) < count:
            image = MaximaImage(axisOrder="row-major")
            image.setTransform(QTransform().translate(-0.5, -0.5))     # cell centres on integers, as the heat map's
            image.setZValue(self.heatmap.image.zValue())
            plot.addItem(image)
            bar = pg.ColorBarItem(values=(0.0, 1.0), colorMap=self.heatmap.base_colormap, interactive=False,
                                  width=BAR_WIDTH)
            bar.setImageItem(image)
            _match_font(bar, self.heatmap.colorbar)
            self._stacked().addItem(bar, row=len(self.bars) + 1, col=0)
            self.images.append(image)
            self.bars.append(bar)

    def _stacked(self) -> pg.GraphicsLayout:
        """The layout of the bars one under the other, the heat map's own first, in its place in the plot."""
        if self.stack is None:
            plot, own = self.heatmap.plot, self.heatmap.colorbar
            self.stack = pg.GraphicsLayout()
            self.stack.setContentsMargins(0, 0, 0, 0)
            if own is not None:
                plot.layout.removeItem(own)
                self.stack.addItem(own, row=0, col=0)
            plot.layout.addItem(self.stack, *BAR_CELL)
        return self.stack

    def _unstack(self) -> None:
        """The heat map's own bar back in its place, alone."""
        plot, own, stack = self.heatmap.plot, self.heatmap.colorbar, self.stack
        self.stack = None
        if own is not None:
            stack.removeItem(own)
        plot.layout.removeItem(stack)
        if stack.scene() is not None:
            stack.scene().removeItem(stack)
        if own is not None:
            plot.layout.addItem(own, *BAR_CELL)


def _label(bar: pg.ColorBarItem, text: str) -> None:
    """The layers a colour bar draws, beside it, in its numbers' font (none: no label, and no room taken)."""
    axis = bar.getAxis("left")
    if text:
        font = bar.getAxis("right").style["tickFont"]
        style = {"font-size": f"{font.pixelSize()}px"} if font is not None and font.pixelSize() > 0 else {}
        axis.setLabel(text, **style)
        bar.showAxis("left")
        axis.setStyle(showValues=False)
    elif axis.isVisible():
        axis.setLabel(None)
        bar.hideAxis("left")


def _match_font(bar: pg.ColorBarItem, like: pg.ColorBarItem | None) -> None:
    """A bar's numbers and label in the font of the heat map's own bar (an export's text is scaled before)."""
    if like is None:
        return
    font = like.getAxis("right").style["tickFont"]
    if font is not None:
        for side in ("left", "right"):
            bar.getAxis(side).setStyle(tickFont=font)
