"""The menu bar: File, Decode, View and Help, with the standard shortcuts.

File: open a model (folder or file), recent models, open/save a session, export
(Ctrl+E exports the current panel: the one in focus, else the last panel with figures the person was in, else
attention; the window recorded live while the person steps, or replaying the recorded steps), quit. Decode: the
toolbar's actions and the trace memory budget. View: a toggle per panel, reset layout, theme. Help: About,
with the versions of the stack and the licences of the models.
"""
from __future__ import annotations

from PySide6.QtCore import QObject, Qt
from PySide6.QtGui import QAction, QActionGroup, QKeySequence
from PySide6.QtWidgets import QApplication, QFileDialog, QInputDialog, QMenu, QMessageBox, QWidget

from explorer.app.figures import animation, export_dialogs, live_recording
from explorer.app.figures.window_animation import ask_and_record_window
from explorer.app.run.trace_budget import MAX_BUDGET_MB, MIN_BUDGET_MB
from explorer.app.state import session_file
from explorer.app.widgets.dialog_focus import take_focus_if_none
from explorer.app.window import model_refs, panel_tips
from explorer.app.window.about import about_html
from explorer.app.window.dock_shares import focused_dock, seen
from explorer.app.window.learn_placement import open_learn
from explorer.app.window.store_dialog import show_store
from explorer.app.window.theme import apply_theme
from explorer.core.errors import ExplorerError
from explorer.views.figure_text import TEXT_SIZES

SESSION_FILTER = "Transformer Explorer session (*.json)"


class Menus:
    """Builds the menus of `window` and keeps the parts that change (recent models)."""

    def __init__(self, window) -> None:
        self.window = window
        bar = window.menuBar()
        self.file = bar.addMenu("&File")
        self.decode = bar.addMenu("&Decode")
        self.view = bar.addMenu("&View")
        self.help = bar.addMenu("&Help")
        self.recent = QMenu("Open &Recent", window)
        self.export = QMenu("&Export", window)
        self.export_current = self._action("&Export Current Panel…", self.export_focused_panel, "Ctrl+E")
        self.export_current.setStatusTip("Export the panel in focus, else the last panel you were in "
                                         "(from the prompt or a toolbar), else Attention")
        self.current_panel = CurrentPanel(window)
        self.record_window = self._action(f"&Record the Window While Stepping ({animation.formats_label()})…",
                                          lambda: ask_and_record_window(self.window))
        self.recording: live_recording.LiveRecording | None = None     # the live recording under way
        self.live_record = self._action("", self.start_or_stop_recording)
        self.cancel_recording = self._action("&Cancel the Recording",
                                             lambda: self.recording and self.recording.cancel())
        self._build_file()
        window.actions.follow(window.controller)          # Run, Step, Back, Play: on while a model is open
        window.controller.model_changed.connect(lambda summary: summary is None and window.show_no_model())
        for action in window.actions.all():
            self.decode.addAction(action)
        self.decode.addSeparator()
        self.decode.addAction(self._action("Trace Memory &Budget…", self.ask_trace_budget))
        self.half_trace = self._action("Record the Trace in &float16 (half the memory)", self.set_half_trace)
        self.half_trace.setCheckable(True)
        self.half_trace.setChecked(window.settings.record_dtype == "float16")
        self.decode.addAction(self.half_trace)
        window.controller.record_dtype_changed.connect(self._on_record_dtype_changed)   # also chosen in a question
        window.controller.budget_changed.connect(lambda n: setattr(window.settings, "trace_budget", n))
        self._build_view()
        self.help.addAction(self._action("&Learn: a Path Through the Model", lambda: self.show_learn(True)))
        self.help.addAction(self._action("&About Transformer Explorer", self.about))
        self.help.addAction(self._action("&Keyboard Shortcuts", self.shortcuts, "F1"))
        self.refresh_recent()

    def _action(self, text: str, slot, shortcut: str | None = None) -> QAction:
        action = QAction(text, self.window)
        if shortcut:
            action.setShortcut(QKeySequence(shortcut))
        action.triggered.connect(slot)
        return action

    def _build_file(self) -> None:
        for action in self.window.model_bar.open_actions(self.window):
            self.file.addAction(action)
        self.file.addMenu(self.recent)
        self.close_model_action = self._action("&Close Model", self.close_model, "Ctrl+W")
        self.file.addAction(self.close_model_action)
        self.file.addAction(self._action("Model S&tore…", lambda: show_store(self.window)))
        self.file.addSeparator()
        self.file.addAction(self._action("Open &Session…", self.open_session, "Ctrl+Shift+O"))
        self.file.addAction(self._action("&Save Session As…", self.save_session, "Ctrl+S"))
        self.file.addSeparator()
        self.file.addAction(self.export_current)
        self.file.addMenu(self.export)
        self.export.aboutToShow.connect(self._fill_export)
        self.dark_figures = QAction("&Dark Export Figures (light, print-ready ones otherwise)", self.window)
        self.dark_figures.setCheckable(True)
        self.dark_figures.setChecked(self.window.settings.figure_theme == "dark")
        self.dark_figures.toggled.connect(self.set_dark_figures)
        self.file.addAction(self.dark_figures)
        self.file.addMenu(self._figure_text_menu())
        self.file.addSeparator()
        quit_action = self._action("&Quit", self.window.close)
        # Ctrl+Q everywhere: without a desktop's platform theme (a bare X server) Qt's Quit is the Exit key.
        ctrl_q = QKeySequence("Ctrl+Q")
        platform_keys = [k for k in QKeySequence.keyBindings(QKeySequence.StandardKey.Quit) if k != ctrl_q]
        quit_action.setShortcuts([ctrl_q, *platform_keys])
        self.file.addAction(quit_action)

    def close_model(self) -> None:
        """Stop the model's jobs and release it (the controller); its model_changed(None) names no model in
        the window's chrome and turns the decoding presses off, and the panels show their empty state through
        the session."""
        self.window.controller.close_model()
        # The focus goes to the prompt: the panels hid what held it, and Qt handed it to the next widget in the
        # chain, the Model box (Space opened its list) or a dock's "?" (Space opened Learn). In the prompt, Space
        # types and Ctrl+Enter does nothing (Run is off with no model).
        target = self.window.prompt if self.window.prompt.isVisible() else self.window
        target.setFocus(Qt.FocusReason.OtherFocusReason)

    def _build_view(self) -> None:
        for dock in self.window.docks.values():
            self.view.addAction(self._panel_entry(dock))
        # Learn's dock is made when first opened (learn_placement), so it is not among the docks: its entry opens
        # it as Help ▸ Learn does, placed beside the panels, and closes it; checked while it is open
        self.learn_action = self._action("&Learn", self.show_learn)
        self.learn_action.setCheckable(True)
        self.view.addAction(self.learn_action)
        self.view.aboutToShow.connect(self.follow_learn)
        self.view.addSeparator()
        self.view.addAction(self._action("&Reset Layout", lambda: self.window.default_layout()))
        self.view.addAction(self._action("&Maximise the Panel in Focus", self.maximise_focused_panel, "Ctrl+Shift+M"))
        self.presentation = self._action("&Presentation (larger text, high contrast, the panel in focus)",
                                         lambda: self.window.presentation.set_on(self.presentation.isChecked()),
                                         "Ctrl+Shift+P")
        self.presentation.setCheckable(True)
        self.view.addAction(self.presentation)
        theme_menu = self.view.addMenu("&Theme")
        group = QActionGroup(self.window)
        for theme in ("system", "light", "dark"):
            action = QAction(theme.capitalize() if theme != "system" else "Follow the System", self.window)
            action.setCheckable(True)
            action.setChecked(self.window.settings.theme == theme)
            action.triggered.connect(lambda _=False, t=theme: self.set_theme(t))
            group.addAction(action)
            theme_menu.addAction(action)

    def _panel_entry(self, dock) -> QAction:
        """View ▸ <panel>: checked while the panel is open. Chosen, it brings forward an open panel that is a tab
        behind another, and otherwise opens it in front of its tab group or closes it; Qt's own toggle closed a panel
        behind a tab, and chosen again brought it back still behind (drive27, drive28)."""
        toggle = dock.toggleViewAction()
        entry = QAction(toggle.text(), self.window)
        entry.setCheckable(True)
        entry.setChecked(toggle.isChecked())
        toggle.toggled.connect(entry.setChecked)

        def chosen(_checked: bool) -> None:
            if bring_forward(dock, entry):
                return
            toggle.trigger()
            if toggle.isChecked():          # opened: in front of its tab group, as asked (drive28: back behind)
                dock.raise_()
        entry.triggered.connect(chosen)
        return entry

    def show_learn(self, on: bool) -> None:
        """View ▸ Learn: open the Learn dock where Help ▸ Learn puts it, bring it forward where it is open behind a
        tab, or close it."""
        dock = getattr(self.window, "learn_dock", None)
        if dock is not None and bring_forward(dock, self.learn_action):
            return
        if on:
            open_learn(self.window)
        elif dock is not None:
            dock.close()
        self.follow_learn()

    def follow_learn(self) -> None:
        """View ▸ Learn checked while the Learn dock is open (in sight or behind a tab), whoever opened or closed
        it: Help ▸ Learn, a panel's "?", the first start, a relaunch or the dock's own close button."""
        dock = getattr(self.window, "learn_dock", None)
        if dock is None:
            self.learn_action.setChecked(False)
            return
        toggle = dock.toggleViewAction()
        if not dock.property("view_menu_follows"):
            dock.setProperty("view_menu_follows", True)
            toggle.toggled.connect(self.learn_action.setChecked)
        self.learn_action.setChecked(toggle.isChecked())

    # ----- recent models, sessions ------------------------------------------------------
    def refresh_recent(self) -> None:
        self.recent.clear()
        recent = self.window.settings.recent_models()
        for reference in recent:
            action = self.recent.addAction(model_refs.short_name(reference))
            action.setToolTip(reference)
            action.triggered.connect(lambda _=False, r=reference: self.window.open_model(r))
        self.recent.setEnabled(bool(recent))

    def open_session(self) -> None:
        """The open dialog starts where the last file was saved (the home folder at first), as exports do, not in
        the process's working folder (the source tree, under `make run`)."""
        path, _ = QFileDialog.getOpenFileName(self.window, "Open a session", export_dialogs.last_folder(),
                                              SESSION_FILTER)
        if path:
            self.open_session_file(path)

    def open_session_file(self, path: str) -> None:
        try:
            state = session_file.load(path)
        except ExplorerError as error:
            self.window.show_error(str(error))
            return
        self.window.restore_session(state)

    def save_session(self) -> None:
        path = export_dialogs.ask_path(self.window, "Save the session", "session.json", SESSION_FILTER)
        if path is None:
            return
        try:
            session_file.save(path, self.window.session_state())
        except ExplorerError as error:
            self.window.show_error(str(error))
            return
        self.window.status.showMessage(f"Saved the session to {path}.", 5000)

    # ----- export -------------------------------------------------------------------------
    def _fill_export(self) -> None:
        self.export.clear()
        for dock in self.window.docks.values():
            actions = _export_actions(dock.widget())
            if actions:
                sub = self.export.addMenu(dock.windowTitle())
                sub.setToolTipsVisible(True)            # a greyed action's tooltip says why it is greyed
                for action in actions:
                    sub.addAction(action)
        self.export.addSeparator()
        recording = self.recording is not None
        self.live_record.setText("■ &Stop Recording and Save" if recording else
                                 f"Start Recording the &Window Live ({animation.formats_label()})…")
        self.export.addAction(self.live_record)
        if recording:
            self.export.addAction(self.cancel_recording)
        self.export.addAction(self.record_window)
        self.export.setEnabled(not self.export.isEmpty())

    def start_or_stop_recording(self) -> None:
        """Start recording the window live, or stop the recording under way and write its file."""
        if self.recording is not None:
            live_recording.stop_and_save(self.recording)
            return
        self.recording = live_recording.ask_and_start(self.window)
        if self.recording is not None:
            self.recording.ended.connect(lambda: setattr(self, "recording", None))

    def export_focused_panel(self) -> None:
        """Ctrl+E: the first export action of the current panel (CurrentPanel): the one holding the focus, else
        the last one with figures the person was in (the prompt editor has nothing to export), else attention."""
        dock = self.current_panel.dock()
        actions = _export_actions(dock.widget()) if dock is not None else []
        if self.window.session.trace is None:
            self.window.show_error("Nothing to export yet; run the prompt first.")
        elif actions:
            actions[0].trigger()

    def maximise_focused_panel(self) -> None:
        """The panel holding the focus (else attention) takes the window; again to restore."""
        self.window.dock_shares.toggle_maximised(focused_dock(self.window))

    def set_dark_figures(self, dark: bool) -> None:
        self.window.settings.figure_theme = "dark" if dark else "light"

    def _figure_text_menu(self) -> QMenu:
        """File ▸ Export Figure Text Size: the labels of exported figures 1×, 1.5× or 2× their size for the image."""
        menu, group = QMenu("Export Figure &Text Size", self.window), QActionGroup(self.window)
        for scale, name in ((size.scale, size.menu) for size in TEXT_SIZES):
            action = menu.addAction(name)
            action.setCheckable(True)
            action.setChecked(self.window.settings.figure_text_scale == scale)
            action.triggered.connect(lambda _=False, s=scale: setattr(self.window.settings, "figure_text_scale", s))
            group.addAction(action)
        self.figure_text = menu
        return menu

    # ----- decoding -------------------------------------------------------------------------
    def ask_trace_budget(self) -> None:
        """Ask how large the recorded trace may grow before the app stops to ask."""
        settings = self.window.settings
        mb, ok = QInputDialog.getInt(
            self.window, "Trace memory budget",
            "Largest trace to record, in MB. Before a prompt or a step would go past it, the app asks "
            "whether to continue from a shorter context:", settings.trace_budget // 10**6,
            MIN_BUDGET_MB, MAX_BUDGET_MB, 100)
        if ok:
            settings.trace_budget = mb * 10**6
            self.window.controller.set_trace_budget(settings.trace_budget)
            self.window.status.showMessage(f"Trace memory budget: {mb:,} MB.", 5000)

    def set_half_trace(self) -> None:
        """Record in float16 (rounded to ~3 significant digits) or float32; the current run is redone."""
        dtype = "float16" if self.half_trace.isChecked() else "float32"
        self.window.settings.record_dtype = dtype
        self.window.controller.set_record_dtype(dtype)
        self.window.status.showMessage(f"The trace is recorded in {dtype}.", 5000)

    def _on_record_dtype_changed(self, dtype: str) -> None:
        self.window.settings.record_dtype = dtype
        self.half_trace.setChecked(dtype == "float16")

    # ----- view, help ----------------------------------------------------------------------
    def set_theme(self, theme: str) -> None:
        self.window.settings.theme = theme
        apply_theme(QApplication.instance(), theme, self.window)

    def about(self) -> None:
        QMessageBox.about(self.window, "About Transformer Explorer", about_html(self.window))
        take_focus_if_none(self.window)     # on a bare X screen no window was active once the box closed

    def shortcuts(self) -> None:
        """Every shortcut the window's actions carry and every declared mouse gesture (panel_tips)."""
        QMessageBox.information(self.window, "Keyboard shortcuts", panel_tips.shortcuts_html(self.window))
        take_focus_if_none(self.window)     # F1 closed on Xvfb: Ctrl+Enter, Space and F1 did nothing until a click


class CurrentPanel(QObject):
    """The panel Ctrl+E exports, as an editor stays current in Qt Creator while the focus is in a tool pane: the
    panel holding the focus, else the last panel with exports the focus was in while it is still in sight (the
    focus went to the prompt, a toolbar or the menu bar), else attention. Ctrl+E from the prompt exported
    attention whatever panel the person had just been reading."""

    def __init__(self, window) -> None:
        super().__init__(window)
        self.window = window
        self.last = None                  # the last dock with exports that held the focus
        QApplication.instance().focusChanged.connect(self._on_focus_changed)

    def _exporting_dock(self, widget: QWidget | None):
        return next((dock for dock in self.window.docks.values() if widget is not None and dock.isAncestorOf(widget)
                     and _export_actions(dock.widget())), None)

    def _on_focus_changed(self, _old: QWidget | None, new: QWidget | None) -> None:
        self.last = self._exporting_dock(new) or self.last

    def dock(self):
        focused = self._exporting_dock(QApplication.focusWidget())
        if focused is not None:
            return focused
        if self.last is not None and seen(self.last) and self.last.widget() is not None:
            return self.last
        return self.window.docks.get("attention")


def bring_forward(dock, entry: QAction) -> bool:
    """Raise `dock` where it is open but a tab behind another, its View entry kept checked; whether it was."""
    if not dock.toggleViewAction().isChecked() or seen(dock):
        return False
    entry.setChecked(True)
    dock.raise_()
    return True


def _export_actions(widget) -> list[QAction]:
    export_actions = getattr(widget, "export_actions", None)
    return list(export_actions()) if callable(export_actions) else []


def build(window) -> Menus:
    return Menus(window)
