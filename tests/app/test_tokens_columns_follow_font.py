"""The Tokens table's columns follow the font: View ▸ Presentation (a larger font) on and then off gives back
columns as wide as their cells in the font shown. They kept the large font's widths, and the id and span
columns went out of sight behind a horizontal scroll bar (drive 19, M5)."""
from __future__ import annotations

import contextlib

from PySide6.QtGui import QFont
from pytestqt.exceptions import TimeoutError

from explorer.app.panels.tokens import TokensPanel
from explorer.app.state.session import Session
from tests.app.synthetic_trace import build_trace


def shown_panel(qtbot) -> TokensPanel:
    """A Tokens panel, 600 x 400 on screen, listing a 12-token prompt and 2 steps."""
    session = Session()
    panel = TokensPanel(session)
    qtbot.addWidget(panel)
    panel.resize(600, 400)
    panel.show()
    trace = build_trace(prompt_len=12, steps=2)
    session.set_model(trace.model)
    session.set_trace(trace)
    qtbot.wait(50)
    return panel


def test_columns_come_back_to_the_font_shown(qtbot):
    panel = shown_panel(qtbot)
    table = panel.table
    columns = range(table.model().columnCount() - 1)          # the last stretches to the panel's edge
    before = [table.columnWidth(c) for c in columns]
    normal = QFont(panel.font())
    large = QFont(normal)
    large.setPointSizeF(normal.pointSizeF() * 2)
    panel.setFont(large)
    qtbot.waitUntil(lambda: table.columnWidth(1) > before[1] * 1.4, timeout=2000)
    panel.setFont(normal)
    qtbot.wait(50)
    for column, width in zip(columns, before):
        assert abs(table.columnWidth(column) - width) <= 2, (column, table.columnWidth(column), width)


def test_presentation_font_on_and_off_gives_back_the_columns_and_header(qtbot):
    """drive21 m14: the application's font 1.4x larger and back (View ▸ Presentation twice): the span column kept
    its cells' width (~70 px) with blank room beside it, and the header read bold while a row was selected."""
    from PySide6.QtWidgets import QApplication

    from explorer.app.window.presentation import FONT_SCALE, scaled
    panel = shown_panel(qtbot)
    table, header = panel.table, panel.table.horizontalHeader()
    columns = range(table.model().columnCount())

    def layout():
        return [table.columnWidth(c) for c in columns], [header.sectionResizeMode(c) for c in columns]

    before, header_look = layout(), header.grab().toImage()
    assert sum(before[0]) == table.viewport().width()           # the span column reaches the right edge
    normal = QFont(QApplication.font())
    try:
        QApplication.setFont(scaled(normal, FONT_SCALE))
        qtbot.waitUntil(lambda: table.columnWidth(0) > before[0][0], timeout=5000)      # refitted to the large font
        qtbot.wait(50)
        assert sum(table.columnWidth(c) for c in columns) == table.viewport().width(), "in Presentation"
    finally:
        QApplication.setFont(normal)
    with contextlib.suppress(TimeoutError):     # the refit comes in a turn of its own (later on a loaded machine)
        qtbot.waitUntil(lambda: layout() == before, timeout=5000)
    assert layout() == before
    assert header.font() == QFont(table.font())
    table.selectRow(4)
    qtbot.wait(50)
    assert header.grab().toImage() == header_look, "the header drawn otherwise with a row selected"
