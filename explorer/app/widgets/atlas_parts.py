"""The head atlas's small parts: its list of heads, its reading's progress bar, a title that never widens its plot,
and a colour bar hidden in place while the heads are scored (explorer.app.panels.atlas builds and uses them)."""
from __future__ import annotations

from PySide6.QtWidgets import QProgressBar, QPushButton, QTableWidget

from explorer.drawing.heatmap import Heatmap

ROW_PAD_PX = 4                  # a list row: its text's height and this


def show_colorbar(heatmap: Heatmap, shown: bool) -> None:
    """The map's colour bar (made with its first data) shown, or hidden with its place kept: hidden, its range, the
    scores drawn before (another model's after a switch), no longer stands beside an empty map, and kept in place,
    the map's view neither widens nor narrows (the atlas's shares were measured with it)."""
    bar = heatmap.colorbar
    if bar is None or bar.isVisible() == shown:
        return
    policy = bar.sizePolicy()
    if not policy.retainSizeWhenHidden():
        policy.setRetainSizeWhenHidden(True)
        bar.setSizePolicy(policy)
    bar.setVisible(shown)


def title_never_widens(plot) -> None:
    """A long map's title (its size, its blocks, how to zoom) is wider than the example's third of the
    panel, and pyqtgraph's title asks for its text's width: the view then overflows its widget and the
    map is cut at the right. The title asks for no width here; a long one is cut at its end instead."""
    label = plot.titleLabel
    label.opts["justify"] = "left"
    fit = label.updateMin

    def fit_height_only() -> None:
        fit()
        label.setMinimumWidth(0)
    label.updateMin = fit_height_only
    fit_height_only()


def reading_progress() -> tuple[QProgressBar, QPushButton]:
    """The bar of layers read so far and its Cancel, hidden until a long text is read."""
    bar = QProgressBar()
    bar.setMinimumWidth(bar.fontMetrics().horizontalAdvance("000 of 000 layers read") + 24)
    bar.setMaximumWidth(260)
    button = QPushButton("Cancel")
    for widget in (bar, button):
        widget.hide()
    return bar, button


def head_table() -> QTableWidget:
    """The list of heads, largest score first: layer, head, score."""
    table = QTableWidget(0, 3)
    table.setHorizontalHeaderLabels(["layer", "head", "score"])
    table.verticalHeader().setVisible(False)
    table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
    table.setSelectionBehavior(QTableWidget.SelectionBehavior.SelectRows)
    table.verticalHeader().setDefaultSectionSize(table.fontMetrics().height() + ROW_PAD_PX)
    return table
