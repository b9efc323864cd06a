"""The KV cache plot's figure title follows the application's font, as every other plot title does: in
Presentation (a font twice as large) its text is drawn about twice as tall; at a fixed 11 pt it stayed put."""
from __future__ import annotations

from PySide6.QtWidgets import QApplication, QVBoxLayout, QWidget

from explorer.app.widgets.kv_plot import BytesPlot
from explorer.app.widgets.plot_text import fit_to_font


def _title_height(plot: BytesPlot) -> float:
    return plot.title.item.boundingRect().height()


def test_the_figure_title_grows_with_the_application_font(qtbot):
    holder = QWidget()
    QVBoxLayout(holder).addWidget(plot := BytesPlot(holder))
    qtbot.addWidget(holder)
    app = QApplication.instance()
    normal = app.font()
    fit_to_font(holder)
    before = _title_height(plot)
    large = normal.__class__(normal)
    large.setPointSizeF(normal.pointSizeF() * 2)
    try:
        app.setFont(large)
        fit_to_font(holder)
        after = _title_height(plot)
    finally:
        app.setFont(normal)
    assert after > 1.6 * before, (before, after)
