"""A panel saved to a file is drawn in the figure's colours, and its axes get their own colours back after.

drawing.colours.printed sets every axis's pens to the figure theme's foreground for the time of the drawing;
afterwards the pens, the title's style and what the axis draws are as the panel had them.
"""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QVBoxLayout, QWidget

from explorer.drawing.colours import FIGURE_COLOURS, printed

AXIS, TICKS, TITLE = "#ff0000", "#00c000", "#0000ff"      # the panel's own colours, none a figure theme's


def axis_pixels(widget, axis: pg.AxisItem) -> set[str]:
    """The colours the axis is drawn in on screen (anti-aliased edges left out by matching exact colours)."""
    view = axis.scene().views()[0]
    image = view.grab().toImage()
    rect = view.mapFromScene(axis.sceneBoundingRect()).boundingRect().intersected(image.rect())
    return {QColor(image.pixel(x, y)).name() for x in range(rect.left(), rect.right())
            for y in range(rect.top(), rect.bottom())}


def test_printed_axes_come_back_in_their_own_pens_and_title_colour(qtbot):
    widget = QWidget()                                         # a panel, with a plot inside
    qtbot.addWidget(widget)
    plot = pg.PlotWidget(widget, background="#202020")
    QVBoxLayout(widget).addWidget(plot)
    widget.resize(400, 300)
    plot.plot(np.arange(10.0))
    axis = plot.getPlotItem().getAxis("left")
    axis.setPen(pg.mkPen(AXIS))
    axis.setTextPen(pg.mkPen(TICKS))
    axis.setLabel("layer", color=TITLE)
    widget.show()
    qtbot.waitExposed(widget)
    before = axis_pixels(widget, axis)
    assert {AXIS, TICKS, TITLE} <= before
    foreground = FIGURE_COLOURS["light"][1]
    with printed(widget, "light"):
        assert axis.pen().color().name() == axis.textPen().color().name() == foreground
        assert TICKS not in axis_pixels(widget, axis)
    assert axis.pen().color().name() == AXIS and axis.textPen().color().name() == TICKS
    assert axis.labelStyle["color"] == TITLE and TITLE in axis.label.toHtml()
    after = axis_pixels(widget, axis)
    assert {AXIS, TICKS, TITLE} <= after and foreground not in after
