"""The KV lab and the KV cache in the launch layout of a bare 1366x768 and 1920x1080 screen (emulated, Learn open
as on a first start): nothing of them is cut by accident (drive 14, findings 6 and 9).

- KV lab ▸ Cache per variant: every row of a SmolLM2-shaped model's variant table is in sight, every plot's
  "tokens" axis title is, the tab does not scroll, and the model's name before "Open config…" is whole. At 1920
  the lab's bottom dock showed one row of six and cut the axis titles at the bottom.
- KV lab ▸ What-if: while converting, the progress words (drawn beside the bar, not on it) are one line within
  their label, elided with "…" and whole in its tooltip (on the bar they wrapped to two, "32% decoding both
  models"), and the bar's text is the whole of them at any width, the share and the stage; after, the steps
  table shows every column without a horizontal scroll bar and the maps' titles are whole ("original: layer 0…").
- KV cache: the per-layer plot's title is whole ("KiB per layer in use (allocated:…" at 1366); a shortened
  wording keeps the allocation in its tooltip.

Expectations are geometry measured in the window: rows' and labels' rectangles against what their viewport shows
(QWidget.visibleRegion), a text's width in its font against the room it is drawn in. No size is copied from the
panels.
"""
from __future__ import annotations

import time

import pyqtgraph as pg
import pytest
from PySide6.QtCore import QRect
from PySide6.QtGui import QFontMetrics, QRegion
from PySide6.QtWidgets import QApplication

from explorer.app.panels.base import Panel
from explorer.app.window.learn_placement import open_on_first_start
from tests.app.journey import BUNDLED, journey_in_a_window
from tests.app.layout_probe import open_window
from tests.app.screen_fit import SCREENS, emulated_screen, settle

SCREEN_IDS = list(SCREENS)


def wait_drawn(window, seconds: float = 20.0) -> None:
    """Until no panel draws in turns any more (Panel.drawing), then a little longer for queued layouts."""
    app, deadline = QApplication.instance(), time.monotonic() + seconds
    quiet = 0
    while quiet < 5:
        app.processEvents()
        quiet = 0 if any(panel.drawing for panel in window.findChildren(Panel)) else quiet + 1
        assert time.monotonic() < deadline, "a panel kept drawing"
        time.sleep(0.02)
    settle(0.5)


def uncovered(widget, rect: QRect) -> QRegion:
    """The part of `rect` (in `widget`'s coordinates) the screen does not show of `widget`: cut by a scroll area,
    a splitter or the dock's edge."""
    return QRegion(rect).subtracted(widget.visibleRegion())


def launch_layout(tmp_path, size):
    """The layout probe's window (a SmolLM2-shaped trace, 30 layers, 9 query and 3 K/V heads) as a first start
    lays it out on `size`: Learn beside the panels."""
    window = open_window(str(tmp_path / "settings.ini"))
    settle(0.3)
    assert open_on_first_start(window, window.settings)
    settle(0.8)
    return window


@pytest.fixture(params=SCREEN_IDS, ids=SCREEN_IDS)
def launched(request, qapp, tmp_path, monkeypatch):
    monkeypatch.setattr("PySide6.QtWidgets.QMessageBox.warning", lambda *a: None)
    size = SCREENS[request.param]
    with emulated_screen(size):
        window = launch_layout(tmp_path, size)
        yield window
        window.close()
        settle(0.2)


def raised(window, name: str):
    dock = window.docks[name]
    dock.show()
    dock.raise_()
    settle(0.3)
    wait_drawn(window)
    return dock.widget()


def test_the_variant_table_shows_every_row_and_no_axis_title_is_cut(launched):
    lab = raised(launched, "kv_lab")
    table = lab.table
    assert table.rowCount() >= 6, "a SmolLM2-shaped model has MHA, GQA, MQA and three MLA ranks"
    viewport = table.viewport()
    out_of_sight = [table.item(row, 0).text() for row in range(table.rowCount())
                    if not uncovered(viewport, table.visualRect(table.model().index(row, 0))).isEmpty()]
    assert not out_of_sight, f"rows out of sight: {out_of_sight} (viewport {viewport.size().toTuple()})"

    figure = lab.plot
    view = figure.viewport()
    for dtype, plot in figure.plots.items():
        label = plot.getAxis("bottom").label
        assert label.isVisible() and label.toPlainText().strip() == "tokens"
        on_view = figure.mapFromScene(label.sceneBoundingRect()).boundingRect()
        cut = uncovered(view, on_view)
        assert cut.isEmpty(), f"{dtype}: the axis title {on_view.getRect()} is cut by {cut.boundingRect().getRect()}"
        box = figure.mapFromScene(plot.getViewBox().sceneBoundingRect()).boundingRect()
        assert min(box.width(), box.height()) >= 120, f"{dtype}: a {box.width()}x{box.height()} plot"
    assert not lab.variants_tab.verticalScrollBar().isVisible(), "the tab scrolls"

    name = lab.source_label
    assert name.text() and name.width() >= QFontMetrics(name.font()).horizontalAdvance(name.text()), \
        f"{name.text()!r} in {name.width()} px"


def title_problem(title: pg.LabelItem) -> str | None:
    """Why a plot title is not whole in its room (None: it is)."""
    shown = title.item.toPlainText()
    if shown != title.text:
        return f"{title.text!r} reads {shown!r}"
    if title.item.boundingRect().width() > title.width() + 0.5:
        return f"{title.text!r} is {title.item.boundingRect().width():.0f} px wide in {title.width():.0f}"
    return None


def test_the_kv_cache_titles_are_whole_and_the_shortened_one_says_the_rest(launched):
    cache = raised(launched, "kv_cache")
    for plot in (cache.layer_plot, cache.total_plot):
        assert plot.titleLabel.text, "an untitled plot"
        assert title_problem(plot.titleLabel) is None, title_problem(plot.titleLabel)
    title = cache.layer_plot.titleLabel
    assert "allocated" in title.text or "allocated" in title.toolTip(), (title.text, title.toolTip())


def words_problem(bar) -> str | None:
    """Why the progress words beside the bar (what is drawn of them) are not lines within their label, or not
    whole somewhere (None: they are)."""
    words, metrics = bar.words, QFontMetrics(bar.words.font())
    lines, room = words.shown().split("\n"), words.contentsRect()
    for line in lines:
        if metrics.horizontalAdvance(line) > room.width():
            return f"{line!r} is {metrics.horizontalAdvance(line)} px in a {room.width()} px label"
    if len(lines) * metrics.lineSpacing() > room.height():
        return f"a {room.height()} px label for {len(lines)} lines of {metrics.lineSpacing()} px"
    drawn = " ".join(lines)
    if drawn.split() != words.text().split() and words.toolTip() != words.text():
        return f"{words.text()!r} is drawn {drawn!r} with no whole tooltip"
    return None


def bar_text(bar) -> str:
    """The bar's format with its share done spelled out as Qt's %p is: the whole text, the words and the stage."""
    share = round(100 * (bar.value() - bar.minimum()) / max(bar.maximum() - bar.minimum(), 1))
    return bar.format().replace("%p", str(share))


@pytest.mark.usefixtures("store_home")
@pytest.mark.parametrize("screen_id", SCREEN_IDS)
def test_the_what_if_progress_table_and_titles_fit(qtbot, tmp_path, monkeypatch, screen_id):
    with journey_in_a_window(qtbot, tmp_path, monkeypatch, SCREENS[screen_id]) as journey:
        assert open_on_first_start(journey.window, journey.window.settings)
        journey.open(BUNDLED / "shakespeare-gqa", "To be, or not to be, that is")
        lab = journey.raise_panel("kv_lab")
        journey.act("the what-if tab", lambda: lab.tabs.setCurrentIndex(1))

        lab.steps_box.setValue(lab.steps_box.maximum())          # long enough to be seen on its way
        lab.run_button.click()
        bar = lab.progress
        qtbot.waitUntil(lambda: bar.format().startswith("%p% ") and "starting" not in bar.format(), timeout=60000)
        stage = bar.format()[4:]
        assert words_problem(bar) is None, words_problem(bar)
        drawn = " ".join(bar.words.shown().split("\n"))
        assert stage in drawn or stage in bar.words.toolTip(), f"the stage {stage!r} is said nowhere"
        assert bar.text() == bar_text(bar), f"the bar's text {bar.text()!r} is not its whole {bar_text(bar)!r}"
        journey.act("cancelling the conversion", lab.cancel_button.click)

        lab.steps_box.setValue(12)
        journey.act("a conversion of 12 steps", lab.run_button.click)
        assert lab.steps_table.rowCount() == 12
        settle(0.3)
        table = lab.steps_table
        assert not table.horizontalScrollBar().isVisible(), \
            f"columns {table.horizontalHeader().length()} px in a {table.viewport().width()} px table"
        maps = lab.what_if.maps
        titles = [item for item in maps.scene().items() if isinstance(item, pg.LabelItem) and item.text]
        assert {"original", lab.result.variant} <= {title.text.split(":")[0] for title in titles}, \
            [title.text for title in titles]
        assert any("layer" in title.text and "head" in title.text for title in titles), "which head is shown"
        problems = [title_problem(title) for title in titles if title_problem(title)]
        assert not problems, problems
        for title in titles:
            on_view = maps.mapFromScene(title.sceneBoundingRect()).boundingRect()
            assert uncovered(maps.viewport(), on_view).isEmpty(), f"{title.text!r} at {on_view.getRect()} is cut"
        for heatmap in (lab.original_map, lab.converted_map):
            box = maps.mapFromScene(heatmap.plot.getViewBox().sceneBoundingRect()).boundingRect()
            assert min(box.width(), box.height()) >= 120, f"a {box.width()}x{box.height()} map"
        assert words_problem(bar) is None, words_problem(bar)


def test_the_variant_table_is_the_plots_legend(launched):
    """The legend's row below the plots is gone from the panel (it took the table's height): each row of the table
    leads with a stroke in its curve's colour, the model's own variant's thicker than the rest."""
    lab = raised(launched, "kv_lab")
    table, curves = lab.table, lab.plot.curves("float32")
    assert [curve.variant_name.replace(" (native)", "") for curve in curves] == \
        [table.item(row, 0).text().replace(" ★ native", "") for row in range(table.rowCount())]
    strokes = []
    for row, curve in enumerate(curves):
        image = table.item(row, 0).icon().pixmap(table.iconSize()).toImage()
        pixels = [image.pixelColor(x, y) for x in range(image.width()) for y in range(image.height())]
        colour, wanted = max(pixels, key=lambda c: c.alpha()), curve.opts["pen"].color()
        assert colour.alpha() > 200, f"row {row} has no stroke"
        inked = [c for c in pixels if c.alpha() > 100]
        assert max(abs(colour.red() - wanted.red()), abs(colour.green() - wanted.green()),
                   abs(colour.blue() - wanted.blue())) <= 8, (curve.variant_name, colour.name(), wanted.name())
        strokes.append((len(inked), curve.variant_name.endswith("(native)")))
    native = [count for count, is_native in strokes if is_native]
    assert native and native[0] > max(count for count, is_native in strokes if not is_native)
    assert not lab.plot.legend.isVisible() or lab.plot.legend.scene() is None, "a second legend under the plots"
