"""A panel's picture holds all it shows: while export.save_widget takes it, every table and text box that scrolls is
drawn whole (whole_tables), the panel grown for them with its plots kept at their size on screen, and every plot
title cut with "…" is drawn whole (whole_titles); afterwards the panel is as it was on screen."""
from __future__ import annotations

from contextlib import contextmanager

import numpy as np
import pyqtgraph as pg
import shiboken6
from PySide6.QtCore import QCoreApplication, QEvent, QSize, Qt
from PySide6.QtGui import QTextOption
from PySide6.QtWidgets import QAbstractScrollArea, QTableView, QTextEdit, QWidget

from explorer.drawing.plot_title import FittingTitle
from explorer.views.image_limits import MAX_SIDE

QWIDGETSIZE_MAX = 16777215      # Qt's "no maximum"


def _whole_size(view: QAbstractScrollArea) -> QSize:
    """The size at which `view` (a table, or a text box) shows all it holds with no scroll bar: a table's
    headers, sections and frame; a text box's document at its width, its margins and frame."""
    frame = 2 * view.frameWidth()
    if isinstance(view, QTextEdit):
        margins, inner = view.contentsMargins(), view.viewportMargins()
        across = margins.top() + margins.bottom() + inner.top() + inner.bottom()
        return QSize(view.width(), int(np.ceil(view.document().size().height())) + across)
    rows, columns = view.verticalHeader(), view.horizontalHeader()
    width = (rows.width() if not rows.isHidden() else 0) + columns.length() + frame
    height = (columns.height() if not columns.isHidden() else 0) + rows.length() + frame
    return QSize(width, height)


def _scrolled(widget) -> list[QAbstractScrollArea]:
    """The tables and text boxes of `widget` in sight that hide some of what they hold."""
    views = widget.findChildren(QTableView) + widget.findChildren(QTextEdit)
    return [view for view in views if view.isVisible() and _cut(view)]


@contextmanager
def whole_tables(widget):
    """While the picture is taken, every table of `widget` that scrolls shows all its rows and columns, and every
    text box all its text: its scroll bars off and `widget` grown by what they hid (within views.image_limits'
    sides), its plots kept at least at their size on screen (_plots_held), then put back. A panel's picture is of
    its size on screen, and Residual stream's 30 layers were cut at L24 with the scroll bars in the picture (drive20
    m16), Tokens' coloured text was its 4-line box and its scroll bar (drive21 m9): an export must not drop what the
    panel holds."""
    tables = _scrolled(widget)
    if not tables:
        yield
        return
    size, least_size = widget.size(), widget.minimumSize()
    kept = [(table, table.minimumSize(), table.maximumSize(), table.horizontalScrollBarPolicy(),
             table.verticalScrollBarPolicy(), table.horizontalScrollBar().value(), table.verticalScrollBar().value())
            for table in tables]
    try:
        with _plots_held(widget):
            _grow_whole(widget, tables)
            yield
    finally:
        for table, least, most, across, down, _x, _y in kept:
            table.setMinimumSize(least)
            table.setMaximumSize(most)
            table.setHorizontalScrollBarPolicy(across)
            table.setVerticalScrollBarPolicy(down)
        _activate(widget)
        widget.setMinimumSize(least_size)       # a window's layout raised its least size to the grown one
        widget.resize(size)
        _activate(widget)
        for table, *_, x, y in kept:
            table.horizontalScrollBar().setValue(x)
            table.verticalScrollBar().setValue(y)


def _grow_whole(widget, tables: list[QAbstractScrollArea]) -> None:
    """`widget` grown until none of `tables` hides anything and its layout has at least its least size (the plots
    held at their size on screen), each table's scroll bars off and its least size its whole one."""
    limit = QSize(MAX_SIDE, MAX_SIDE)
    for _ in range(3):          # a panel may lay itself out again at its new size (Residual stream: its plot)
        extra = QSize(max(max(0, _whole_size(t).width() - t.width()) for t in tables),
                      sum(max(0, _whole_size(t).height() - t.height()) for t in tables))
        widget.resize((widget.size() + extra).boundedTo(limit))
        for table in tables:
            table.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
            table.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
            table.setMinimumSize(_whole_size(table).boundedTo(limit))
            table.setMaximumSize(QSize(QWIDGETSIZE_MAX, QWIDGETSIZE_MAX))
        _activate(widget)
        least = widget.minimumSizeHint()           # the plots' held sizes and the tables' whole ones together
        if least.width() > widget.width() or least.height() > widget.height():
            widget.resize(widget.size().expandedTo(least).boundedTo(limit))
            _activate(widget)
            continue
        if not any(_cut(table) for table in tables):
            break


@contextmanager
def _plots_held(widget):
    """Every plot of `widget` in sight kept at least at its size on screen while the panel is grown: grown for a
    long text, Show the work laid itself out for the tall room, the text taking its height, and saved its map
    ~0 px tall and its q·k bars a 10 px sliver (drive21 S1)."""
    views = [view for view in widget.findChildren(pg.GraphicsView) if view.isVisible()]
    held = [(view, view.minimumSize()) for view in views]
    for view, least in held:
        view.setMinimumSize(least.expandedTo(view.size()))
    try:
        yield
    finally:
        for view, least in held:
            if shiboken6.isValid(view):
                view.setMinimumSize(least)


def _cut(table: QAbstractScrollArea) -> bool:
    """Whether `table` hides some of its rows or columns, or text (behind a scroll bar, or past its edge)."""
    whole = _whole_size(table)
    return whole.width() > table.width() or whole.height() > table.height()


def _activate(widget) -> None:
    """`widget` laid out now, with every layout inside it, the windows above it left to the event loop (a dock
    laid out meanwhile would size the panel back to the dock)."""
    for inner in [widget, *widget.findChildren(QWidget)]:
        QCoreApplication.sendPostedEvents(inner, QEvent.Type.LayoutRequest)
    if widget.layout() is not None:
        widget.layout().activate()


@contextmanager
def whole_titles(widget):
    """While the picture is taken, every plot title that is cut with "…" to its plot's width on screen
    (plot_title.FittingTitle) is shown whole, wrapped onto as many centred lines as its width needs, its plot
    laid out again beneath it; afterwards each is cut to fit again. A file has no tooltip to hold the rest: Why
    this token's "every head, and each layer's FFN (colours…" was saved as it was cut."""
    views = ([widget] if isinstance(widget, pg.GraphicsView) else []) + widget.findChildren(pg.GraphicsView)
    titles = [item for view in views for item in view.items()
              if isinstance(item, FittingTitle) and item.isVisible() and item.text and item.width() > 0]
    for _ in range(3):              # wrapped, the plots make room for its lines; a column may change width then
        changed = [title for title in titles if title.item.textWidth() != title.width()]
        for title in changed:
            _wrap_whole(title, title.width())
        QCoreApplication.sendPostedEvents(None, QEvent.Type.LayoutRequest)
        if not changed:
            break
    try:
        yield titles
    finally:
        for title in titles:
            if shiboken6.isValid(title) and shiboken6.isValid(title.item):
                _wrap_whole(title, None)
        QCoreApplication.sendPostedEvents(None, QEvent.Type.LayoutRequest)


def _wrap_whole(title: FittingTitle, width: float | None) -> None:
    """`title`'s whole text wrapped, centred, at `width`; None: on one line, cut to its width again."""
    option = QTextOption(title.item.document().defaultTextOption())
    option.setAlignment(Qt.AlignmentFlag.AlignHCenter if width else Qt.AlignmentFlag.AlignLeft)
    title.item.document().setDefaultTextOption(option)
    title.item.setTextWidth(width if width else -1)
    title._fitting = bool(width)           # FittingTitle cuts nothing meanwhile (its _fit returns at once)
    title._fitted = None
    asked = title.opts.get("color")
    title.setText(title.text, color=title._colour)
    title.opts["color"] = asked            # the colour asked for, as FittingTitle keeps it
