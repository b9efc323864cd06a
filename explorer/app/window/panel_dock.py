"""The dock every panel sits in: it tells its panel whether it is in sight, may build the panel only
when first needed, turns a double-click on its title into a request to maximise the panel, and may
carry a "?" on its title that opens the panel's stop on the Learn path."""
from __future__ import annotations

from typing import Callable

from PySide6.QtCore import QEvent, QRect, Qt, QTimer, Signal
from PySide6.QtWidgets import QAbstractButton, QDockWidget, QLabel, QToolButton, QToolTip, QWidget

from explorer.app.widgets.turns import Turns

QT_TITLE_BUTTONS = ("qt_dockwidget_floatbutton", "qt_dockwidget_closebutton")
FOLLOWED_EVENTS = (QEvent.Type.Move, QEvent.Type.Resize, QEvent.Type.Show, QEvent.Type.Hide)
# Where a raise reaches the dock before its panel: raise_() sends ZOrderChange, in which Qt's dock layout places the
# tab; a tab clicked moves the dock into sight (from where Qt keeps a tab behind another, left of and above the
# window). Its children are resized inside these events. A Move or Resize of a dock already in sight (the window
# resized or dragged, a separator dragged) is no raise: holding the grid at each one held it through a whole drag.
RAISE_EVENTS = (QEvent.Type.ZOrderChange, QEvent.Type.Move)


class PanelDock(QDockWidget):
    """A dock that tells its panel whether it is in sight, and may build the panel only when first needed.

    A double-click on its title asks for the panel to take the whole window (`maximise_requested`;
    again to restore) instead of floating it; its tooltip (what the panel shows) is shown over the
    title only, not over every widget of the panel that has none of its own.

    Tabs behind another tab are still visible to Qt (it only moves them out of sight), so the panel
    hears through `set_exposed` whether it is in the person's sight (`exposed`) and skips its redraws
    meanwhile. Given `build`, the dock holds an empty placeholder until it is first exposed or its
    `widget()` is asked for: the KV, mask and Q/K/V tabs behind the embeddings cost nothing at start-up.

    A panel built because its tab was raised draws in the next turn of the event loop, not in the turn that
    built it, the dock saying "Drawing…" over it meanwhile: building and drawing a plot panel in one go held
    the window past 100 ms at a long prompt.

    `visibilityChanged(True)` is not taken at its word: a relayout that tabifies the docks again (Help ▸
    Learn's tabs_beside_column, View ▸ Reset Layout) brings each tab in front in turn, and building on
    the signal built every tabbed panel at once, each starting its first model job. Whether the dock is
    exposed is judged once the layout has settled (`_settle_exposure`, queued after the signal).

    A raise holds the attention grid (`_raising`, two turns due in widgets.turns) from the dock's first event of it
    (RAISE_EVENTS: raise_() or its tab clicked; not a resize or a drag of a dock in sight) until the window has laid
    out and painted the tab: raised again at 8,000 tokens while the grid
    filled, the KV cache's relayout and paint took 35-49 ms of GUI CPU but froze the window 94-179 ms, waiting on
    the grid's threads for Python's lock between the layout's and paint's many calls into Python.
    """

    maximise_requested = Signal(QDockWidget)
    gestures = (("Double-click a panel's title", "Maximise the panel to the window; again to restore"),
                ("Click ? on a panel's title", "Open the Learn path at the stop that explains the panel"))

    def __init__(self, title: str, parent: QWidget, build: Callable[[], QWidget] | None = None) -> None:
        super().__init__(title, parent)
        self._build = build
        self._settling = False                      # a _settle_exposure is queued
        self._drawing_note: QLabel | None = None    # over a panel built this turn, drawn in the next
        # A timer, not a queued call (QTimer.singleShot(0) posts one): a queued call runs in the same pass of the
        # event loop as the build's layout and paint, before the window's own timers, and the window froze for both.
        self._draw_timer = QTimer(self, singleShot=True, interval=0)
        self._draw_timer.timeout.connect(self._first_drawing)
        self._raising = Turns(self)                 # due from a raise until its layout and paint have run
        self.learn_button: QToolButton | None = None
        self.visibilityChanged.connect(self._on_visibility_changed)
        if build is not None:
            super().setWidget(QWidget())

    @property
    def built(self) -> bool:
        return self._build is None

    def on_title(self, y: float) -> bool:
        """Whether a point at height `y` (dock coordinates) lies on the title bar, above the panel."""
        return y < super().widget().geometry().top()

    def event(self, event) -> bool:
        kind = event.type()
        if kind in RAISE_EVENTS and hasattr(self, "_raising") and self._is_raise(event):   # (not while constructed)
            self._raising.start(_raise_turns())      # before the panel is laid out, inside this event
        if kind == QEvent.Type.MouseButtonDblClick and not self.isFloating() and self.on_title(event.position().y()):
            self.maximise_requested.emit(self)
            return True
        if kind == QEvent.Type.ToolTip and not self.on_title(event.pos().y()):
            QToolTip.hideText()
            event.ignore()
            return True
        return super().event(event)

    def _is_raise(self, event) -> bool:
        """Whether `event` (a RAISE_EVENTS one) raises the dock: raise_() (ZOrderChange), or a Move that brings a
        docked tab from out of the window into it (its tab clicked)."""
        if event.type() == QEvent.Type.ZOrderChange:
            return True
        window = self.parentWidget()
        if window is None or self.isFloating():
            return False
        inside = window.rect()
        return (not inside.intersects(QRect(event.oldPos(), self.size()))
                and inside.intersects(QRect(event.pos(), self.size())))

    # ----- the "?" on the title ------------------------------------------------------------------
    def add_learn_button(self, open_stop: Callable[[], object], tip: str) -> QToolButton:
        """A "?" on the title bar, left of Qt's float and close buttons, that calls `open_stop`."""
        button = QToolButton(self)
        button.setObjectName("learn_button")
        button.setText("?")
        button.setAutoRaise(True)
        button.setToolTip(tip)
        button.clicked.connect(open_stop)
        self.learn_button = button
        for qt_button in self._qt_title_buttons():
            qt_button.installEventFilter(self)
        self._place_learn_button()
        return button

    def _qt_title_buttons(self) -> list[QAbstractButton]:
        """Qt's float and close buttons, children of the dock itself. Looked up among the panel's widgets too
        (every button inside the panel, a tab bar's scroll arrows), a hide at the window's close reached a
        wrapper of a button Qt had deleted: SIGSEGV in objectName, once in ~10 loaded runs of a test window."""
        return [button for name in QT_TITLE_BUTTONS
                if (button := self.findChild(QAbstractButton, name, Qt.FindChildOption.FindDirectChildrenOnly))]

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self._place_learn_button()

    def eventFilter(self, watched, event) -> bool:
        """Qt lays its float and close buttons out in its own layout pass, after `resizeEvent` and again at
        a font change (View ▸ Presentation): the "?" follows them every time they move, so it is never left
        where they now are."""
        if event.type() in FOLLOWED_EVENTS:
            self._place_learn_button()
        return super().eventFilter(watched, event)

    def _place_learn_button(self) -> None:
        """Square, as high as the title bar, just left of the leftmost of Qt's own title buttons (Qt lays
        those out itself at every resize, so this follows them)."""
        button = self.learn_button
        if button is None:
            return
        title_px = super().widget().geometry().top()
        side = max(title_px - 2, 12)
        qt_buttons = [b for b in self._qt_title_buttons() if not b.isHidden()]
        right = min((b.geometry().left() for b in qt_buttons), default=self.width() - 2)
        button.setGeometry(right - side - 2, max((title_px - side) // 2, 0), side, side)
        button.setVisible(title_px >= 10 and self.titleBarWidget() is None)

    def widget(self) -> QWidget:
        self._ensure_built()
        return super().widget()

    def exposed(self) -> bool:
        """In the person's sight: shown, and not a tab behind another (Qt moves those out of the window, so
        none of it is left to paint)."""
        return self.isVisible() and not self.visibleRegion().isEmpty()

    def _ensure_built(self, draw_later: bool = False) -> None:
        """Build the panel, and tell it whether it is exposed: now, or (`draw_later`) in the next turn of the
        event loop, so that its first drawing has a turn of its own."""
        if self._build is None:
            return
        build, self._build = self._build, None
        placeholder, panel = super().widget(), build()
        if hasattr(panel, "set_exposed"):            # before it joins the dock, which may show it
            panel.set_exposed(self.exposed() and not draw_later)
        self.setWidget(panel)
        placeholder.deleteLater()
        if self.isVisible():
            panel.show()
        if draw_later and hasattr(panel, "set_exposed"):
            self._say_drawing(panel, getattr(panel, "drawing_text", "Drawing…"))
            self._draw_timer.start()

    def _say_drawing(self, panel: QWidget, text: str) -> None:
        """A note across the top of the panel until its first drawing: nothing of it is drawn yet (the panel
        says "Drawing…" itself once it draws in parts)."""
        note = QLabel(text, panel)
        note.setObjectName("dock_drawing_note")
        note.setAutoFillBackground(True)
        note.setStyleSheet("QLabel { padding: 6px; background: palette(alternate-base); }")
        note.setGeometry(0, 0, max(panel.width(), self.width()), note.sizeHint().height())
        note.show()
        note.raise_()
        self._drawing_note = note

    def _first_drawing(self) -> None:
        """The turn after the build: the panel told whether it is exposed, and drawn if it is."""
        note, self._drawing_note = self._drawing_note, None
        self._tell_panel(self.exposed())
        if note is not None:
            note.deleteLater()

    def _on_visibility_changed(self, visible: bool) -> None:
        if not visible:
            self._tell_panel(False)
        elif not self._settling:
            self._settling = True
            self._raising.start(_raise_turns())
            QTimer.singleShot(0, self, self._settle_exposure)

    def _settle_exposure(self) -> None:
        """After a visibilityChanged(True): once the window's layout has placed every dock (a relayout still
        pending is done first), build the panel if it is exposed and tell it whether it is."""
        self._settling = False
        window = self.parentWidget()
        if window is not None and window.layout() is not None:
            window.layout().activate()
        exposed = self.exposed()
        if exposed and not self.built:
            self._ensure_built(draw_later=True)      # told in the next turn (_first_drawing)
            return
        self._tell_panel(exposed)

    def _tell_panel(self, exposed: bool) -> None:
        if exposed and self._draw_timer.isActive():
            return                                   # its first drawing has its own turn (_first_drawing)
        panel = super().widget()
        if self.built and hasattr(panel, "set_exposed"):
            panel.set_exposed(exposed)


def _raise_turns():
    """The turns a raise holds the grid for: the one that settles its exposure (and builds its panel) with the
    window's relayout, and the one after it, with the paint (Qt paints in its posted events, before a timer's turn)."""
    yield
    yield
