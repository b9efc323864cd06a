"""The panels on a 1366x768 projector: in View ▸ Presentation their text grows with the window's, and no
header is cut; the KV cache panel shows both of its occupancy plots, whole, in every layout a person meets.

The expectations are the Presentation factor as the presentation module states it, text widths measured
in the font shown, and the plots' geometry against the window's: none is a size copied from a panel.
"""
from __future__ import annotations

from PySide6.QtCore import QPoint, QRect
from PySide6.QtGui import QFontInfo, QFontMetrics, QTextCursor
from PySide6.QtWidgets import QStyle

from explorer.app.window import presentation
from explorer.app.window.learn_placement import open_learn
from tests.app.projector import toggle_presentation
from tests.app.screen_fit import settle
from tests.app.test_kv_clipping import wait_drawn

MIN_PLOT_PX = 120            # the bar: a plot smaller than this is a strip of ticks


def reset_layout(window) -> None:
    next(a for a in window.menus.view.actions() if a.text().replace("&", "") == "Reset Layout").trigger()
    settle(0.8)


def text_px(document, position: int = 1) -> int:
    """The pixel size of the font a document draws its character at `position` in."""
    cursor = QTextCursor(document)
    cursor.setPosition(position)
    return QFontInfo(cursor.charFormat().font()).pixelSize()


def grown(before: int, after: int) -> bool:
    """`after` is `before` times the Presentation factor, give or take a pixel of rounding."""
    return abs(after - before * presentation.FONT_SCALE) <= 1


def test_the_tokens_panel_text_grows_in_presentation_and_its_headers_fit(projector_window):
    window = projector_window
    tokens = window.docks["tokens"].widget()
    tokens.setFocus()
    header_px = QFontInfo(tokens.header.document.defaultFont()).pixelSize()
    span_px = text_px(tokens.text_view.document())
    toggle_presentation(window)
    assert [name for name, dock in window.docks.items() if dock.isVisible()] == ["tokens"]
    header_now = QFontInfo(tokens.header.document.defaultFont()).pixelSize()
    assert grown(header_px, header_now), f"the formula header is {header_now} px, was {header_px} px"
    span_now = text_px(tokens.text_view.document())
    assert grown(span_px, span_now), f"the coloured token text is {span_now} px, was {span_px} px"
    header = tokens.table.horizontalHeader()
    margin = 2 * header.style().pixelMetric(QStyle.PixelMetric.PM_HeaderMargin, None, header)
    for section, name in enumerate(("position", "token", "id")):
        needed = QFontMetrics(header.font()).horizontalAdvance(name) + margin
        assert header.sectionSize(section) >= needed, \
            f"the '{name}' header is {header.sectionSize(section)} px wide, its text needs {needed} px"
    toggle_presentation(window)
    assert QFontInfo(tokens.header.document.defaultFont()).pixelSize() == header_px
    assert text_px(tokens.text_view.document()) == span_px


def plot_problems(window, panel) -> list[str]:
    """Each occupancy plot whose view is under MIN_PLOT_PX either way, or not wholly inside its figure and the
    window (a person would see it cut, or not at all)."""
    problems = []
    view = panel.plots
    for plot in (panel.layer_plot, panel.total_plot):
        box = view.mapFromScene(plot.getViewBox().sceneBoundingRect()).boundingRect()
        on_window = QRect(view.mapTo(window, box.topLeft()), box.size())
        name = plot.titleLabel.text
        if min(box.width(), box.height()) < MIN_PLOT_PX:
            problems.append(f"'{name}' is {box.width()}x{box.height()} px")
        if not view.rect().contains(box) or not window.rect().contains(on_window):
            problems.append(f"'{name}' at {on_window.getRect()} lies outside its figure "
                            f"{QRect(view.mapTo(window, QPoint(0, 0)), view.size()).getRect()} or the window")
    return problems


def test_both_kv_cache_plots_are_in_view_at_1366x768(projector_window):
    window = projector_window
    panel = window.docks["kv_cache"].widget()

    def check(when: str) -> None:
        window.docks["kv_cache"].raise_()
        settle(0.5)
        assert not window.docks["kv_cache"].visibleRegion().isEmpty(), f"{when}: the KV cache panel is hidden"
        problems = plot_problems(window, panel)
        assert not problems, f"{when}: " + "; ".join(problems)

    check("the default layout")
    reset_layout(window)
    check("after View ▸ Reset Layout")
    open_learn(window)
    settle(0.8)
    check("with Help ▸ Learn open")
    reset_layout(window)
    if window.learn_dock.isVisible():
        check("with Learn open, after View ▸ Reset Layout")


def title_px(plot) -> int:
    """The pixel size of the font a plot's title is drawn in."""
    return text_px(plot.titleLabel.item.document())


def test_plot_titles_grow_in_presentation_and_the_kv_plots_stay_whole(projector_window):
    window = projector_window
    kv, embeddings = window.docks["kv_cache"].widget(), window.docks["embeddings"].widget()
    derivation = window.docks["derivation"].widget()
    window.docks["derivation"].raise_()
    wait_drawn(window)          # a first raise draws in turns: on a loaded machine 0.3 s did not see them all
    window.docks["kv_cache"].raise_()
    wait_drawn(window)
    plots = {"KV per layer": kv.layer_plot, "KV all layers": kv.total_plot, "embedding norms": embeddings.norm_plot,
             "q·k products": derivation.products}
    before = {name: title_px(plot) for name, plot in plots.items()}
    kv.setFocus()
    toggle_presentation(window)
    wait_drawn(window)
    assert [name for name, dock in window.docks.items() if dock.isVisible()] == ["kv_cache"]
    problems = plot_problems(window, kv)
    assert not problems, "in Presentation: " + "; ".join(problems)
    window.docks["kv_cache"].hide()
    window.docks["embeddings"].show()
    wait_drawn(window)
    now = {name: title_px(plot) for name, plot in plots.items()}
    small = [f"{name}: {now[name]} px, was {before[name]} px" for name in plots if not grown(before[name], now[name])]
    assert not small, "titles that did not grow: " + "; ".join(small)
    window.docks["embeddings"].hide()
    window.docks["derivation"].show()
    wait_drawn(window)
    view = derivation.products_view          # its grown title must not push the chart past the view's edge
    box = view.mapFromScene(derivation.products.getViewBox().sceneBoundingRect()).boundingRect()
    assert view.rect().contains(box), f"the q·k chart {box.getRect()} is cut by its view {view.rect().getRect()}"


def test_the_next_token_columns_hold_their_text_in_presentation(projector_window):
    window = projector_window
    table = window.docks["next_token"].widget().table
    assert table.rowCount() > 0, "the next-token table shows candidates"
    table.setFocus()
    toggle_presentation(window)
    margin = 2 * (table.style().pixelMetric(QStyle.PixelMetric.PM_FocusFrameHMargin, None, table) + 1)
    cut = []
    for column in range(table.columnCount() - 1):                # the last column stretches to the edge
        for row in range(table.rowCount()):
            item = table.item(row, column)
            needed = QFontMetrics(item.font()).horizontalAdvance(item.text()) + margin
            if table.columnWidth(column) < needed:
                cut.append(f"'{item.text()}' needs {needed} px, its column is {table.columnWidth(column)} px")
    assert not cut, "; ".join(cut)


def test_the_residual_table_grows_in_presentation_and_its_rows_hold_its_text(projector_window):
    window = projector_window
    panel = window.docks["residual"].widget()
    window.docks["residual"].raise_()
    settle(0.3)
    before = QFontInfo(panel.table.font()).pixelSize()
    panel.setFocus()
    toggle_presentation(window)
    assert [name for name, dock in window.docks.items() if dock.isVisible()] == ["residual"]
    now = QFontInfo(panel.table.font()).pixelSize()
    assert grown(before, now), f"the table's text is {now} px, was {before} px"
    line = QFontMetrics(panel.table.font()).height()
    rows = panel.table.verticalHeader()
    short = [row for row in range(panel.table.rowCount()) if rows.sectionSize(row) < line]
    assert not short, f"rows {short} are lower than the {line} px of a line of the table's font"


def test_the_attention_map_axis_titles_grow_in_presentation(projector_window):
    window = projector_window
    panel = window.docks["attention"].widget()
    axes = {side: panel.large.plot.getAxis(side) for side in ("left", "top")}
    before = {side: QFontInfo(axis.label.font()).pixelSize() for side, axis in axes.items()}
    panel.setFocus()
    toggle_presentation(window)
    assert [name for name, dock in window.docks.items() if dock.isVisible()] == ["attention"]
    now = {side: QFontInfo(axis.label.font()).pixelSize() for side, axis in axes.items()}
    small = [f"{axes[side].labelText}: {now[side]} px, was {before[side]} px" for side in axes
             if not grown(before[side], now[side])]
    assert not small, "axis titles that did not grow: " + "; ".join(small)
