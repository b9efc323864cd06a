"""What every panel shares: a header with its formula and live shapes, a context menu
of export actions, and the subscriptions to the session.

A panel takes the session in its constructor and subscribes (napari's `QtDims(dims)`),
redraws from the trace on `trace_changed`, highlights on `selection_changed`, and only
ever talks back through `session.select(...)` and the named requests of `session.requests`.

The contract every panel keeps: given (model, trace, selection) it either draws them, and
`drawn()` names the model and trace it drew, or it shows an explicit state that names why
(empty, working, out of date), its views hidden or marked. A model switch, a new trace, a
cancel or an error reaches it by one path, `_on_context_changed`, which also drops its running
jobs (`drop_work`: every Asker, ModelCall and background job it owns) and its kept results
(`forget`), and clears the pointer's readout, so nothing of another model or run stays up.

A Stop (CANCEL) of a panel whose `stop_holds` stops its work for good instead (`stop_work`): what it was
asking is cancelled and not asked again by its next redraw or selection echo, what it computed of the trace
that stays is kept, and it says it stopped (`show_stopped`, with Compute) until the person asks again:
Compute, another selection, another run or model (`resume_work`).
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass

import pyqtgraph as pg
from PySide6.QtCore import QEvent, QObject, Qt, QTimer
from PySide6.QtGui import QAction, QGuiApplication
from PySide6.QtWidgets import QHBoxLayout, QLabel, QMenu, QPushButton, QSizePolicy, QVBoxLayout, QWidget

from explorer.app.figures import export_dialogs
from explorer.app.figures.animation import copy_figure
from explorer.app.panels.drawing_parts import LABELS_A_TURN, LONG_ROWS, DrawsInParts, measuring
from explorer.app.panels.panel_words import (
    decoder_model_unavailable,
    decoder_view_unavailable,
    dims,
    formula_html,
    stopped_text,
    visible_text,
)
from explorer.app.state.session import CANCEL, NO_MODEL, Change, Selection, Session
from explorer.app.widgets.plot_text import fit_to_font
from explorer.app.widgets.text_widgets import QUIET_GROUND, WARNING_GROUND, LineLabel, WrappedText, note_style
from explorer.app.window.error_bar import ErrorLine
from explorer.core.intervention import Intervention, active, describe
from explorer.core.trace import Trace


@dataclass(frozen=True)
class Drawn:
    """What a panel shows: kind "trace" with the session's model and trace ids it drew, or an explicit
    state ("empty", "working", "out of date") and why, in words."""

    kind: str
    model_id: int | None = None
    trace_id: int | None = None
    why: str = ""


# LineLabel and WrappedText live in text_widgets, the words in panel_words, measuring in drawing_parts; panels import
# them from here
__all__ = ["LABELS_A_TURN", "LONG_ROWS", "Drawn", "LineLabel", "Panel", "WrappedText", "decoder_model_unavailable",
           "decoder_view_unavailable", "dims", "formula_html", "measuring", "stopped_text", "visible_text"]


def under_words(intervention: Intervention | None) -> str:
    """", with experiments (ablate L1.H2)" for a result computed under `intervention`; "" for the plain model."""
    return "" if intervention is None else f", with experiments ({describe(intervention)})"


class Panel(QWidget, DrawsInParts):
    """Base of every panel: `title`, `formula`, `export_actions()`, and the session wiring."""

    title = "Panel"
    object_name = "panel"

    def __init__(self, session: Session, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.session = session
        self.setObjectName(self.object_name)
        self.formula = ""
        self.header = WrappedText()        # right-click ▸ Copy formula copies it
        self.readout = LineLabel(" ")
        self.readout.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.note = QLabel()               # "nothing to show yet" / "out of date: …", see view_state()
        self.note.setObjectName("panel_note")
        self.note.setWordWrap(True)
        self.note.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)   # never widens a dock
        self.note.setStyleSheet("QLabel { padding: 6px; border-radius: 3px; }")
        self.note.hide()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.setSpacing(2)
        layout.addWidget(self.note)
        layout.addWidget(self.header)
        self.body_widget = QWidget()
        self.body = QVBoxLayout(self.body_widget)
        self.body.setContentsMargins(0, 0, 0, 0)
        self.body.setSpacing(2)
        layout.addWidget(self.body_widget, 1)
        layout.addWidget(self.readout)
        self.error_line = ErrorLine()             # a failed job: one line, Details… for the rest
        layout.addWidget(self.error_line)
        if self.stop_holds:
            layout.insertWidget(1, self._stopped_row())
        self.drawn_trace_id: int | None = None    # the session's trace_id when this panel last drew
        self.drawn_model_id: int | None = None    # and its model_id
        self.askers: list = []                    # every Asker of this panel (asking.Asker joins itself)
        self._updating = False
        self._dirty = True
        self._exposed = True
        self._raising = False                     # refreshing because the panel came into sight
        self._init_parts()
        self._actions: list[QAction] | None = None
        self.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.customContextMenuRequested.connect(self._show_menu)
        session.context_changed.connect(self._on_context_changed)
        session.selection_changed.connect(self._on_selection_changed)
        session.tokens_changed.connect(self._on_tokens_changed)
        session.out_of_date_changed.connect(lambda _reason: self.show_state())
        session.not_run_changed.connect(lambda _reason: self.show_state())
        session.busy_changed.connect(lambda _busy: self.show_state() if self.session.trace is None else None)

    # ----- what subclasses write -------------------------------------------------------
    needs_trace = True           # False for panels that draw something without a trace (live tokens, the model)
    needs_model = True           # False for a panel that works with no model open (Learn opens its own)
    empty_text = "Nothing to show yet: type a prompt and press Run (Ctrl+Enter)."
    working_text = "Nothing to show yet: the model is working (its progress is in the dialog or the status bar)."
    drawing_text = "Drawing…"    # shown while a drawing's parts run in later turns (draw_in_parts)
    stop_holds = False           # True: a Stop stops the panel's work until the person asks again (stop_work)

    def redraw(self) -> None:
        """Draw everything from `self.session.trace`; then `show_selection`."""

    def answer_due(self) -> bool:
        """Whether the panel waits for the model thread's answer that replaces what it shows (the Residual
        stream's, read after a switch): a picture taken now would be of the cleared panel. Not a state of its own:
        the panel draws the current trace meanwhile (drawn)."""
        return False

    def unavailable(self, trace: Trace) -> str | None:
        """Why this panel has nothing to show for `trace` (a decoder-only view of an encoder), or None."""
        return None

    def forget(self) -> None:
        """Drop every result kept from the model or the trace (another model or run came): the next
        redraw computes or asks again."""

    def show_selection(self, selection: Selection) -> None:
        """Highlight `selection` without redrawing the data."""

    def height_to_read(self) -> int | None:
        """The panel's height at which it reads as meant, given where a column has it (dock_layout.column_heights);
        None where its minimum does (a minimum alone keeps the window's least size on a small screen)."""
        return None

    def make_export_actions(self) -> list[QAction]:
        """The panel's export actions; the default saves what the panel shows."""
        return [export_dialogs.panel_picture_action(self)]

    # ----- shared -----------------------------------------------------------------------
    @property
    def trace(self) -> Trace | None:
        return self.session.trace

    def set_formula(self, formula: str) -> None:
        if formula == self.formula:
            return
        self.formula = formula
        self.header.setText(formula_html(formula))

    def export_actions(self) -> list[QAction]:
        """Actions for the panel's context menu, the main window's Export menu and Ctrl+E (the first)."""
        if self._actions is None:
            self._actions = self.make_export_actions()
        return self._actions

    def select(self, **changes) -> None:
        """Ask the session to change the selection, unless we are applying one ourselves."""
        if not self._updating:
            self.session.select(**changes)

    @contextmanager
    def updating(self):
        """While set, widget signals caused by our own updates are not sent back as intents."""
        previous, self._updating = self._updating, True
        try:
            yield
        finally:
            self._updating = previous

    def add_to_plot_menu(self, plot) -> None:
        """Append the export actions to a pyqtgraph ViewBox's own right-click menu."""
        menu = plot.getViewBox().menu
        menu.addSeparator()
        for action in self.export_actions():
            menu.addAction(action)

    def set_exposed(self, exposed: bool) -> None:
        """The dock's visibilityChanged: False while its tab lies behind another tab, where Qt still
        calls the panel visible (it only moves it out of sight). Redraws what it missed once exposed."""
        self._exposed = exposed
        if exposed and self._dirty:
            self._refresh_raised()

    def is_shown(self) -> bool:
        return self.isVisible() and self._exposed

    def refresh(self) -> None:
        """Redraw now if shown, or once shown again (hidden docks and tabs behind others cost nothing per step)."""
        if not self.is_shown():
            self._dirty = True
            self._stop_parts()                 # drawn again once shown: nothing older is finished meanwhile
            return
        self._dirty = False
        self.show_state()
        trace = self.session.trace
        if trace is None or not self.unavailable(trace):      # an unavailable view is hidden: nothing to draw
            with self.updating():
                self.redraw()
                self.show_selection(self.session.selection)
        self.drawn_trace_id, self.drawn_model_id = self.session.trace_id, self.session.model_id
        self.settle_views()

    def _refresh_raised(self) -> None:
        previous, self._raising = self._raising, True
        try:
            self.refresh()
        finally:
            self._raising = previous

    @property
    def raising(self) -> bool:
        """Drawing because the panel came into sight (its tab raised, first shown): a drawing that would hold
        the window then may run in parts (draw_in_parts)."""
        return self._raising

    # ----- which trace is shown -----------------------------------------------------------
    def drawn(self) -> Drawn:
        """What the panel shows now: the model and trace it drew, or its explicit state and why."""
        trace = self.session.trace
        if self.needs_model and self.session.not_run == NO_MODEL:     # File ▸ Close Model: no model's data stays
            return Drawn("empty", why=NO_MODEL)
        if self.needs_trace and trace is None:
            not_run = self.session.not_run
            working = self.session.busy and not not_run     # a run clears not_run: work beside it brings no trace
            return Drawn("working" if working else "empty",
                         why=self.working_text if working else not_run or self.empty_text)
        reason = self.unavailable(trace) if trace is not None else None
        if reason:
            return Drawn("empty", why=reason)
        if self.session.out_of_date and self.follows_prompt():
            return Drawn("out of date", self.drawn_model_id, self.drawn_trace_id, self.session.out_of_date)
        return Drawn("trace", self.drawn_model_id, self.drawn_trace_id)

    def follows_prompt(self) -> bool:
        """Whether what the panel shows comes from the prompt's run, so that an edited prompt puts it out of date;
        a panel showing only what the model itself gives (the head atlas's scores on random tokens) says no."""
        return True

    def view_state(self) -> tuple[str, object]:
        """("trace", trace_id) of the trace drawn, or (state, why): the short form of `drawn()`."""
        drawn = self.drawn()
        return (drawn.kind, drawn.trace_id) if drawn.kind == "trace" else (drawn.kind, drawn.why)

    def show_state(self) -> None:
        """Say plainly when there is nothing to show (the views are hidden, so nothing stale stays up) or when
        the trace no longer matches the prompt (the views stay, under a warning)."""
        drawn = self.drawn()
        hidden = drawn.kind in ("empty", "working")
        for widget in (self.header, self.body_widget, self.readout):
            widget.setVisible(not hidden)
        self.note.setVisible(drawn.kind != "trace" or self.drawing)
        if drawn.kind == "trace" and self.drawing:
            self.note.setText(self.drawing_text)
            self.note.setStyleSheet(note_style())
        elif drawn.kind != "trace":
            self.note.setText(drawn.why if hidden else f"⚠ Out of date: {drawn.why}")
            self.note.setStyleSheet(note_style(QUIET_GROUND if hidden else WARNING_GROUND))

    def settle_views(self) -> None:
        """Apply pyqtgraph's pending view ranges and transforms now. Left to the paint, they move the
        items while Qt paints, and every view of the panel is painted a second time."""
        for view in self.findChildren(pg.GraphicsView):
            if view.isVisible():
                view.scene().prepareForPaint()

    # ----- the one path: a model, a trace, a cancel, an error ---------------------------------
    def _on_context_changed(self, change: Change) -> None:
        if self.stop_holds and change.reason == CANCEL:
            self.stop_work()                   # the model and trace stay, and so does what was computed of them
        elif change.drops_work:
            self.resume_work()                 # another run or model, or an error: what was stopped is asked again
            self.drop_work()
            self.forget()
        self.readout.setText(" ")              # the pointer's readout described the drawing now replaced
        self.error_line.clear()
        self._on_trace_changed(self.session.trace)

    def experiments_on(self) -> Intervention | None:
        """The Experiments dock's experiments that are on, as one Intervention (None where none is): a job that
        runs the model again for this panel runs it under them, as the run it explains was (drive23 S1: Why this
        token and the residual stream read the plain model beside an ablated run, saying nothing)."""
        intervention = active(self.session.experiments)
        return None if intervention.is_empty else intervention

    def drop_work(self) -> None:
        """Stop waiting for every job this panel started: its askers' questions, and each child object's
        work (ModelCall, background maps), so no late answer of another model or run is drawn."""
        self._stop_parts()
        for asker in self.askers:
            asker.drop()
        self._drop_children()

    def stop_work(self) -> None:
        """The person stopped the work (Stop, or the panel's own Cancel): every question unanswered is cancelled
        and its key not asked again (Asker.stop) until `resume_work` or another key, and the child objects' work
        is dropped as in drop_work. A panel adds what else it stops (a reading, a cell derived off the GUI)."""
        self._stop_parts()
        for asker in self.askers:
            asker.stop()
        self._drop_children()

    def resume_work(self) -> None:
        """The person asks again (Compute, Resume), or another run or model came: what a Stop cut off is asked at
        the next question, and the panel no longer says it stopped."""
        for asker in self.askers:
            asker.resume()
        if self.stop_holds:
            self.show_stopped(None)

    def show_stopped(self, what: str | None) -> None:
        """The explicit stopped state (stop_holds panels): `what` a Stop cut off, with Compute; None hides it."""
        self.stopped_row.setVisible(what is not None)
        if what is not None:
            self.stopped_label.setText(stopped_text(what))

    def _stopped_row(self) -> QWidget:
        row = self.stopped_row = QWidget()
        line = QHBoxLayout(row)
        line.setContentsMargins(0, 0, 0, 0)
        self.stopped_label = QLabel()
        self.stopped_label.setObjectName("panel_stopped")
        self.stopped_label.setWordWrap(True)
        self.stopped_label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)   # never widens
        self.compute_button = QPushButton("Compute")
        self.compute_button.setToolTip("Compute what Stop cancelled")
        self.compute_button.clicked.connect(self.compute_stopped)
        line.addWidget(self.stopped_label, 1)
        line.addWidget(self.compute_button)
        self.show_stopped(None)
        return row

    def compute_stopped(self) -> None:
        """Compute: the person asks for what a Stop cancelled."""
        self.resume_work()
        self.refresh()

    def _drop_children(self) -> None:
        for child in self.findChildren(QObject):
            drop = getattr(child, "drop_work", None)
            if callable(drop):
                drop()

    def _on_trace_changed(self, trace) -> None:
        self.refresh()

    # ----- session handlers --------------------------------------------------------------

    def _on_tokens_changed(self, tokens) -> None:
        """Most panels draw the trace only; the token panel also draws the live tokens."""

    def _on_selection_changed(self, selection: Selection) -> None:
        if self._dirty:
            self.refresh()
            return
        trace = self.session.trace
        if trace is not None and self.unavailable(trace):   # a view it does not draw asks the model nothing
            return
        with self.updating():
            self.show_selection(selection)
        self.settle_views()

    def showEvent(self, event) -> None:
        super().showEvent(event)
        if self._dirty:
            self._refresh_raised()

    def changeEvent(self, event) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.FontChange:     # (View ▸ Presentation) once the children have it too
            QTimer.singleShot(0, self, lambda: fit_to_font(self))

    def context_menu(self) -> QMenu:
        """The panel's right-click menu: its exports, Copy figure, and Copy formula."""
        menu = QMenu(self)
        menu.setToolTipsVisible(True)               # a greyed action's tooltip says why it is greyed
        for action in self.export_actions():
            menu.addAction(action)
        menu.addAction("Copy figure", lambda: copy_figure(self))
        if self.formula:
            menu.addSeparator()
            menu.addAction("Copy formula", lambda: QGuiApplication.clipboard().setText(self.formula))
        return menu

    def _show_menu(self, pos) -> None:
        self.context_menu().exec(self.mapToGlobal(pos))
