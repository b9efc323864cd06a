"""What a tab's first raise does once, not again and again (issue 22: no tab switch blocks for more than 100 ms at
8,000 tokens). Counts, not times:

- a plot title resized to the width it already fits sets its rich text no more (a first raise's layout resized
  every title hundreds of times at one width, each resize cutting the title again);
- a dock builds its panel in one turn of the event loop and lets it draw in the next, a note saying it is drawing
  meanwhile (building and drawing a plot panel in one go held the window);
- the tick labels of a trace's tokens are made once for all its maps and figures (a long map's first paint made
  16,000 labels).
"""
from __future__ import annotations

from types import SimpleNamespace

import pyqtgraph as pg
from PySide6.QtCore import QRectF, Qt, QTimer
from PySide6.QtWidgets import QDockWidget, QLabel, QMainWindow, QWidget

from explorer.app.widgets.plot_text import fitting_title
from explorer.app.window.panel_dock import PanelDock
from explorer.views import maps
from explorer.views.maps import axis_labels

TITLE = "KiB per layer in use (allocated: 12.00 MiB each), with a title longer than its plot"


def counted_html(title) -> list:
    """Every rich text set on `title`'s text item from now on."""
    calls, set_html = [], title.item.setHtml
    title.item.setHtml = lambda html: (calls.append(html), set_html(html))[1]
    return calls


def test_a_title_resized_to_its_width_is_not_set_again(qtbot):
    view = pg.GraphicsLayoutWidget()
    qtbot.addWidget(view)
    plot = view.addPlot()
    fitting_title(plot)
    plot.setTitle(TITLE)
    view.resize(300, 200)
    view.show()
    qtbot.waitExposed(view)
    title = plot.titleLabel
    place = title.geometry()
    calls = counted_html(title)
    for lower in range(1, 6):               # the same width, another height: what a layout pass does
        title.setGeometry(QRectF(place.x(), place.y(), place.width(), place.height() - lower))
        assert title.geometry().height() == place.height() - lower     # (a real resize)
    assert calls == [], f"the title was set {len(calls)} times at a width it already fitted"

    title.setGeometry(QRectF(place.x(), place.y(), place.width() / 2, place.height()))
    assert calls, "a narrower title was not cut again"
    shown = title.item.toPlainText()
    assert shown.endswith("…") and TITLE.startswith(shown[:-1]) and title.item.boundingRect().width() <= \
        place.width() / 2, shown
    assert title.text == TITLE                    # the whole title stays its text (and its tooltip)


class Drawable(QWidget):
    """A panel as a dock sees it: told whether it is exposed, it draws when it is."""

    drawing_text = "Drawing…"

    def __init__(self, seen: dict) -> None:
        super().__init__()
        self.seen = seen

    def set_exposed(self, exposed: bool) -> None:
        if exposed and "drawn_after_a_turn" not in self.seen:
            self.seen["drawn_after_a_turn"] = self.seen.get("turned", False)


def test_a_raised_dock_builds_its_panel_and_draws_it_in_different_turns(qtbot):
    window = QMainWindow()
    qtbot.addWidget(window)
    window.setCentralWidget(QWidget())
    front = PanelDock("front", window)
    front.setWidget(QLabel("in front"))
    seen: dict = {}

    def next_turn() -> None:
        seen["turned"] = True
        notes = [label for label in panel().findChildren(QLabel) if label.isVisible()]
        seen["note"] = [label.text() for label in notes]

    def build() -> QWidget:
        # A zero timer started before the dock starts its own (a posted call may run after a due timer on a
        # loaded machine): zero timers fire in the order they were started.
        turn = QTimer(window, singleShot=True, interval=0)
        turn.timeout.connect(next_turn)
        turn.start()
        return Drawable(seen)

    behind = PanelDock("behind", window, build=build)

    def panel() -> QWidget:                          # what the dock holds, without building it
        return QDockWidget.widget(behind)

    for dock in (front, behind):
        window.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, dock)
    window.tabifyDockWidget(front, behind)
    front.raise_()
    window.resize(600, 400)
    window.show()
    qtbot.waitExposed(window)
    qtbot.waitUntil(lambda: front.exposed())
    assert not behind.built

    behind.raise_()
    qtbot.waitUntil(lambda: "drawn_after_a_turn" in seen)
    assert behind.built
    assert seen["drawn_after_a_turn"] is True, "the panel was drawn in the turn that built it"
    assert seen["note"] == [Drawable.drawing_text], "nothing said the built panel was still to be drawn"
    qtbot.waitUntil(lambda: not [label for label in panel().findChildren(QLabel) if label.isVisible()])


def test_a_long_traces_labels_are_made_once_for_two_paints(monkeypatch):
    texts = tuple(f" tok\n{i}" for i in range(3000))        # texts no other test labelled
    trace = SimpleNamespace(token_text=texts, encoder=None)
    made = []
    short_label = maps.short_label
    monkeypatch.setattr(maps, "short_label", lambda text, width=10: (made.append(text), short_label(text, width))[1])

    first = axis_labels(trace, (len(texts), len(texts)), numbered=True)
    second = axis_labels(trace, (len(texts), len(texts)), numbered=True)

    expected = [f"{i} ·tok↵{i}" for i in range(len(texts))]     # a space shown as ·, a newline as ↵
    assert first == second == (expected, expected)
    assert len(made) == len(texts), f"{len(made)} labels made for {len(texts)} tokens over two paints"


def test_an_exposure_settled_before_the_first_drawing_waits_for_it(qtbot):
    """A second visibilityChanged(True) settled between the build and its drawing turn does not draw the panel
    in the build's pass of the event loop (seen once on a loaded CI machine)."""
    window = QMainWindow()
    qtbot.addWidget(window)
    window.setCentralWidget(QWidget())
    seen: dict = {}
    dock = PanelDock("dock", window, build=lambda: Drawable(seen))
    window.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, dock)
    window.resize(600, 400)
    window.show()
    qtbot.waitExposed(window)
    qtbot.waitUntil(lambda: dock.built)          # built, its first drawing due in a later turn
    seen.clear()

    fresh = PanelDock("fresh", window, build=lambda: Drawable(seen))
    window.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, fresh)
    fresh.show()
    window.layout().activate()
    fresh._ensure_built(draw_later=True)
    fresh._settle_exposure()                      # what a second visibilityChanged(True) queues
    assert "drawn_after_a_turn" not in seen, "the panel was told to draw before its own turn"
    seen["turned"] = True
    qtbot.waitUntil(lambda: "drawn_after_a_turn" in seen)
    assert seen["drawn_after_a_turn"] is True
