"""The main window: composes the prompt editor, the panel docks, toolbars, menus and status bar.

It holds no decoding logic of its own: presses go to the `DecodingController`,
the trace lives in the `Session`, and every panel is built as `cls(session)`
from `explorer.app.panels.registry.PANELS`.
"""
from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QRect, QSize, Qt, QTimer
from PySide6.QtWidgets import QDockWidget, QMainWindow, QMessageBox, QWidget

from explorer.app.panels import registry
from explorer.app.panels.derivable import cannot_derive
from explorer.app.run.controller import DecodingController
from explorer.app.state.session import Session
from explorer.app.state.session_file import Autosaver, SessionState
from explorer.app.thread.catalog_loader import CatalogLoader
from explorer.app.thread.catalog_schedule import CatalogSchedule
from explorer.app.thread.worker import ModelWorker
from explorer.app.widgets.dialog_focus import FocusKeeper, take_focus_if_none
from explorer.app.widgets.steady_progress import SteadyProgress
from explorer.app.window import (
    crash_restore,
    dock_layout,
    dock_tab_bars,
    dropped_files,
    error_bar,
    learn_placement,
    menus,
    model_opening,
    model_refs,
    panel_tips,
    pull_dialog,
)
from explorer.app.window.dock_shares import DockShares, near
from explorer.app.window.given_size import GivenSize
from explorer.app.window.loading_dialog import LoadingDialog
from explorer.app.window.model_picker import ModelToolbar
from explorer.app.window.panel_dock import PanelDock
from explorer.app.window.presentation import Presentation
from explorer.app.window.prompt_editor import PromptEditor
from explorer.app.window.settings import AppSettings
from explorer.app.window.status_bar import NOTICE_ROOM_PX, StatusLine
from explorer.app.window.toolbar import DecodingActions, DecodingToolbar, SamplingToolbar, ToolbarRows
from explorer.core import store

TITLE = "Transformer Explorer"
LOADING_SHOWN_AFTER_MS = 400           # a load shorter than this shows no dialog


def loaded_notice(name: str, cleared: bool, width) -> str:
    """The status bar's notice of a model opened: where the switch cleared the experiments, the longest of its
    forms that `width` (a text's px) keeps within the room the fields always leave a notice (NOTICE_ROOM_PX, less
    its 18 px of margins). The whole sentence, naming the model they were made on, stands in the Experiments dock:
    in the notice it was clipped at 1366 px ("… SmolLM2-135M-Instruct.Q4_1 were clearec", drive 22)."""
    if not cleared:
        return f"Loaded {name}."
    forms = (f"Loaded {name}; experiments cleared (see Experiments).", f"Loaded {name}; experiments cleared.",
             "Experiments cleared (see Experiments).")
    return next((form for form in forms if width(form) <= NOTICE_ROOM_PX - 18), forms[-1])


class MainWindow(QMainWindow):
    def __init__(self, worker: ModelWorker | None = None, settings: AppSettings | None = None,
                 panels: tuple[registry.PanelSpec, ...] | None = None, autosave_path: str | Path | None = None,
                 catalog=model_refs.catalog_choices) -> None:
        super().__init__()
        self.setWindowTitle(TITLE)
        self.setObjectName("main_window")
        self.setAcceptDrops(True)
        self.closed = False                 # closeEvent ran: errors still arriving open no dialog (show_error)
        self.settings = settings or AppSettings()
        self.session = Session(self)
        self.worker = worker or ModelWorker(parent=self)
        self.controller = DecodingController(self.session, self.worker, self)
        self.controller.set_trace_budget(self.settings.trace_budget)
        self.controller.set_record_dtype(self.settings.record_dtype)
        self.catalog_loader = CatalogLoader(catalog, self)
        self.prompt = PromptEditor(self)
        self.setDockNestingEnabled(True)
        self.given_size = GivenSize(self)            # a dock's minimum grown for a moment does not keep it grown
        self.dock_shares = DockShares(self)
        self.presentation = Presentation(self)
        self.docks = self._build_docks(panels)
        learn_placement.add_stop_buttons(self)      # the "?" on each panel's title: its stop on the Learn path
        self.actions = DecodingActions(self)
        self.model_bar = ModelToolbar(self)
        self.decoding_bar = DecodingToolbar(self.actions, self)
        self.sampling_bar = SamplingToolbar(self)
        for bar in (self.model_bar, self.decoding_bar, self.sampling_bar):
            self.addToolBar(bar)
        self.toolbar_rows = ToolbarRows(self)
        self.status = StatusLine(self, session=self.session)
        self.setStatusBar(self.status)
        # A floor under the window's least width: the status bar spans the window, so the layout's least is at
        # least its least (a least set on the window itself replaced the layout's: 760 of 903 px asked)
        self.status.setMinimumWidth(dock_layout.LEAST_WIDTH_PX)
        self.loading_dialog = LoadingDialog(self, self.controller.cancel_load)
        self.menus = menus.build(self)
        # Laid out once the menu bar, toolbars and status bar are there: chrome_px counted 22 px of them
        # before, so an 800 px screen got the stacked layout its 141 px of bars leave no room for.
        self.default_layout()
        self.autosaver = Autosaver(self.session_state, autosave_path, parent=self)
        self.listing = CatalogSchedule(self.catalog_loader, self.worker, lambda: self.controller.loading, self)
        self._connect()
        self.sampling_bar.set_settings(self.settings.sampling)
        self.model_bar.set_models([], self.settings.recent_models(), None)
        self._restore_layout()
        self.autosaver.start()
        self.focus_keeper = FocusKeeper(self)

    # ----- composition --------------------------------------------------------------
    def _build_docks(self, panels) -> dict[str, QDockWidget]:
        docks = {"prompt": self._dock("prompt", "Prompt", self.prompt)}
        fronts = set()
        for spec in registry.PANELS if panels is None else panels:
            object_name, title, cls = spec.object_name, spec.title, spec.cls
            area = dock_layout.area_of(object_name)
            if area in dock_layout.TABBED_AREAS and area in fronts:     # behind another tab: built once first shown
                docks[object_name] = PanelDock(title, self, lambda cls=cls: cls(self.session))
                docks[object_name].setObjectName(f"{object_name}_dock")
            else:
                fronts.add(area)
                docks[object_name] = self._dock(object_name, title, cls(self.session))
            docks[object_name].panel_class = cls
        for object_name, dock in docks.items():
            dock.setToolTip(panel_tips.panel_tip(object_name, getattr(dock, "panel_class", None)))
            dock.dockLocationChanged.connect(lambda _area: QTimer.singleShot(0, self, self._layout_made))
            dock.toggleViewAction().triggered.connect(lambda _on: QTimer.singleShot(0, self, self._layout_made))
            dock.maximise_requested.connect(self.dock_shares.toggle_maximised)
        return docks

    def _dock(self, object_name: str, title: str, widget: QWidget) -> QDockWidget:
        dock = PanelDock(title, self)
        dock.setObjectName(f"{object_name}_dock")
        dock.setWidget(widget)
        return dock

    def default_layout(self, docks: dict[str, QDockWidget] | None = None, available: QRect | None = None) -> None:
        """Every dock in its default area at sizes for the screen (see dock_layout): View ▸ Reset Layout."""
        self.dock_shares.maximised = None
        dock_layout.arrange(self, docks if docks is not None else self.docks, available)
        QTimer.singleShot(0, self, self._layout_made)

    def _layout_made(self) -> None:
        """After a layout is made (default, reset or restored): the bars it no longer uses put away, its tabs
        described, its shares kept."""
        dock_tab_bars.put_away_stale_bars(self)
        self._describe_tabs()
        self.dock_shares.take()

    def _describe_tabs(self) -> None:
        panel_tips.describe_tabs(self)

    def _connect(self) -> None:
        c, a = self.controller, self.actions
        for action in (a.run, a.step):       # the text typed just now, not only what the debounce settled
            action.triggered.connect(self.prompt.settle)
        a.run.triggered.connect(c.run)
        a.step.triggered.connect(c.step)
        a.back.triggered.connect(c.back)
        a.reset.triggered.connect(c.reset)
        a.stop.triggered.connect(c.stop)
        a.play.toggled.connect(lambda on: c.set_playing(on, self.decoding_bar.speed.value()))
        self.decoding_bar.speed.valueChanged.connect(lambda v: c.set_playing(c.playing, v))
        c.playing_changed.connect(self._on_playing_changed)
        self.prompt.prompt_settled.connect(c.set_prompt)
        self.sampling_bar.sampling_changed.connect(c.set_sampling)
        self.model_bar.model_chosen.connect(self.open_model)
        self.model_bar.pull_requested.connect(lambda name: pull_dialog.pull_model(self, name))
        self.model_bar.device_changed.connect(self._on_device_changed)
        self.worker.devices_found.connect(self._on_devices_found)
        self.catalog_loader.ready.connect(self._on_catalog_ready)
        self.worker.progress.connect(self.loading_dialog.show_progress)
        self.worker.pausing.connect(self.loading_dialog.show_now)
        c.model_ready.connect(self._on_model_ready)
        c.load_failed.connect(self._on_load_failed)
        c.loading_changed.connect(self._on_loading_changed)
        c.loading_changed.connect(self.session.model_opening)       # the panels' jobs hear of a switch as it starts
        c.notice.connect(lambda text: self.status.showMessage(text, 6000))
        self.session.trace_changed.connect(self.status.show_trace)
        if "derivation" in self.docks:                   # a clicked cell opens Show the work, which derives it
            self.session.requests.cell_requested.connect(self._show_the_work)
        self.session.busy_changed.connect(self.status.show_busy)
        self.session.error_raised.connect(self.show_error)

    def _show_the_work(self) -> None:
        """A clicked cell raises Show the work where it can derive it: for an encoder or encoder–decoder it only
        says it cannot, and the map clicked stayed hidden behind that sentence (drive 20, m17). The rule is asked of
        the trace: the panel, behind its tab, is not built to be asked."""
        trace = self.session.trace
        if trace is None or cannot_derive(trace) is None:      # with no trace yet it waits for one
            self.docks["derivation"].raise_()

    # ----- models -------------------------------------------------------------------
    def open_model(self, reference: str) -> None:
        if not self._terms_accepted(reference):
            self.model_bar.set_current(self.controller.loading or self.controller.reference)
            self.status.showMessage(
                f"{model_refs.short_name(reference)} was not opened: its terms were declined.", 8000)
            return
        device, dtype = self.model_bar.choice()
        self.status.showMessage(store.first_load_notice(reference) or f"Loading {model_refs.short_name(reference)}…")
        self.controller.load(reference, device, dtype)

    def _terms_accepted(self, reference: str) -> bool:
        return model_opening.terms_accepted(self, self.settings, reference)

    def refresh_models(self) -> None:
        """List the catalog again, in the background (see CatalogSchedule); the picker fills in when it is done."""
        self.listing.now()

    def _on_catalog_ready(self, choices, error) -> None:
        if error:
            self.status.showMessage(f"Could not list the model store: {error}", 8000)
        self.model_bar.set_models(choices, self.settings.recent_models(), self.controller.reference)

    def show_no_model(self) -> None:
        """The window's chrome once the model is closed: what _on_model_ready names, named as none."""
        self.model_bar.set_current(None)
        self.status.show_model(None)
        self.status.show_trace(None)
        self.setWindowTitle(TITLE)
        self._name_the_prompt(source=False)       # the translator's "Source" named a text no model reads now
        self.status.showMessage("The model was closed.", 4000)

    def _on_model_ready(self, summary) -> None:
        self.settings.remember_model(summary.reference)
        self.model_bar.set_current(summary.reference)     # named at once, not after the listing (a long prefill)
        model_refs.remember(summary.reference)
        self.listing.after_load()
        self.status.show_model(summary.info, summary.device, summary.dtype)
        self.status.show_trace(self.session.trace)
        self.setWindowTitle(f"{summary.name} — {TITLE}")
        cleared = self.session.experiments_cleared          # said once, by the switch that cleared them
        loaded = loaded_notice(summary.name, bool(cleared), self.status.fontMetrics().horizontalAdvance)
        self.status.showMessage(loaded, 8000 if cleared else 4000)
        self._name_the_prompt(source=summary.info.is_encoder_decoder)
        self.menus.refresh_recent()

    def _name_the_prompt(self, source: bool) -> None:
        """The editor is an encoder-decoder's source text, or a prompt (any other model, or none)."""
        self.docks["prompt"].setWindowTitle("Source" if source else "Prompt")
        self.prompt.set_role("source" if source else "prompt")

    def _on_load_failed(self, reference: str) -> None:
        self.refresh_models()           # the picker names the model in use again once loading ends

    def _on_devices_found(self, devices: dict) -> None:
        self.model_bar.set_devices(devices, self.settings.device, self.settings.dtype)
        self.listing.first()

    def _on_device_changed(self, device: str, dtype: str) -> None:
        self.settings.device, self.settings.dtype = device, dtype
        reference = model_opening.to_reopen(self.controller, device, dtype)
        if reference:
            self.open_model(reference)

    def _on_loading_changed(self, loading: bool) -> None:
        """The Loading dialog and its Cancel last as long as the load; once it ends, the picker names the model
        in use (the one loaded, or the one kept by a cancel or a failure)."""
        if self.loading_dialog.follow(loading, LOADING_SHOWN_AFTER_MS):
            self.status.clearMessage()
        if not loading:
            self.model_bar.set_current(self.controller.reference)

    @property
    def progress(self) -> SteadyProgress | None:
        """The Loading dialog while a load lasts, else None."""
        return self.loading_dialog.dialog

    def _on_playing_changed(self, playing: bool) -> None:
        if self.actions.play.isChecked() != playing:
            self.actions.play.setChecked(playing)

    # ----- errors, sessions ----------------------------------------------------------------
    def show_error(self, message: str) -> None:
        """The one door for errors: the status bar's error line keeps the message (Details… shows all of
        it), and a dialog says its first line; neither takes its size from the text. A window closed already
        asks nothing: a job's failure still queued when it closed would open a modal dialog over no window."""
        self.status.error_line.show_error(message)
        if self.closed:
            return
        QMessageBox.warning(self, TITLE, error_bar.summary(message))
        take_focus_if_none(self)            # on a bare X screen no window was active once the dialog closed

    def session_state(self) -> SessionState:
        summary = self.controller.summary
        return SessionState.of(self.controller.reference or self.controller.loading, self.prompt.text,
                               self.sampling_bar.settings(), self.session.trace,
                               summary.device if summary else self.model_bar.choice()[0],
                               summary.dtype if summary else self.model_bar.choice()[1],
                               experiments=self.session.experiments, edited=self.session.out_of_date is not None)

    def restore_session(self, state: SessionState, run: bool = True) -> None:
        """A saved session back in the window, replayed (`run`) or waiting for Run."""
        self.prompt.set_text(state.prompt)
        self.sampling_bar.set_settings(state.sampling)
        self.controller.restore(state, run)

    def offer_crash_restore(self) -> bool:
        """After a crash, ask whether to restore the autosaved session; True when restored. Declined, its
        prompt is kept as the last prompt, which the start puts in the editor."""
        return crash_restore.offer_crash_restore(self, self.autosaver.path, self.restore_session,
                                                 lambda state: self.restore_session(state, run=False),
                                                 lambda prompt: setattr(self.settings, "last_prompt", prompt))

    # ----- window events ----------------------------------------------------------------
    def sizeHint(self) -> QSize:
        """What the docks would like, never more than the screen's available area: with no window
        manager to cap it, a window that asked for more went past the screen's edge."""
        return super().sizeHint().boundedTo(dock_layout.available_geometry(self).size())

    def dragEnterEvent(self, event) -> None:
        dropped_files.accept_drag(event)

    def dropEvent(self, event) -> None:
        dropped_files.open_dropped(self, event)

    def _restore_layout(self) -> None:
        geometry, state = self.settings.geometry(), self.settings.dock_state()
        self._fit_when_shown = geometry is None
        if geometry is not None:
            self.restoreGeometry(geometry)       # the screen, and maximised or full screen
            place = self.settings.window_place()
            if place is not None and not self.windowState() & (Qt.WindowState.WindowMaximized
                                                               | Qt.WindowState.WindowFullScreen):
                self.setGeometry(place)          # where it was: keep_on_screen brings it onto this screen
        if state is not None:
            self.restoreState(state)
            learn_placement.after_restore(self, self.settings.learn_open_at)   # Learn, open at the quit
            self.menus.follow_learn()

    def showEvent(self, event) -> None:
        super().showEvent(event)
        QTimer.singleShot(0, self, lambda: take_focus_if_none(self))     # launched on a bare X screen
        fit, self._fit_when_shown = getattr(self, "_fit_when_shown", None), None
        if fit is None or self.isFullScreen():
            return
        if not fit:
            available = dock_layout.available_geometry(self)
            filled = self.settings.window_filled and not self.isMaximized()      # maximised: the window manager's
            # It filled a screen of another size: laid out afresh for this one, as a first launch here is. The
            # 1366x768 layout (every panel in one tab group) came back on 1920x1080 with one panel in sight, and
            # Qt gave the growth to the prompt: 398 px for its 86 (drive26).
            elsewhere = filled and not near(self.frameGeometry().size(), available.size())
            if filled and not elsewhere and self.frameGeometry() != available:
                # Nearly its size (a panel's strip came or went): it fills it, the change handed out as any
                # resize of a layout is (DockShares.give_back: the prompt keeps its height).
                self.layout().activate()
                self.dock_shares.take()
                dock_layout.fit_to_screen(self)
                self.layout().activate()
                self.dock_shares.give_back()
            # A saved layout made for a larger screen, or one that had grown past its own: its dock
            # sizes no longer fit this screen, so it is laid out afresh rather than squeezed (the
            # panels the person had closed stay closed).
            if elsewhere or not dock_layout.keep_on_screen(self) or \
                    not dock_layout.fits(self.settings.window_size(), self):
                closed = [dock for dock in self.docks.values() if dock.isHidden()]
                self.default_layout()
                for dock in closed:
                    dock.hide()
            QTimer.singleShot(0, self, self._layout_made)
            return
        self._fit_first_start()

    def _fit_first_start(self) -> None:
        """Fill the screen's available area now that the frame's size is known, and keep the frame on it
        once the platform has placed it. The app sizes itself: a request to maximise is only a window
        manager's to grant, and on a bare X screen the window kept the fit made before its frame was
        known (1366x736 over a 32 px strip of a 1366x768 screen)."""
        dock_layout.fit_to_screen(self)

        def once_placed() -> None:
            dock_layout.keep_on_screen(self)
            groups = getattr(self, "dock_groups", None)
            if groups:
                dock_layout.size_docks(self, groups)
            self._layout_made()
        QTimer.singleShot(0, self, once_placed)

    def closeEvent(self, event) -> None:
        self.closed = True
        self.controller.set_playing(False)
        self.settings.save_window(self.saveGeometry(), self.dock_shares.state_to_save(), self.size(),
                                  self.normalGeometry(),
                                  filled=self.frameGeometry() == dock_layout.available_geometry(self))
        self.settings.learn_open_at = learn_placement.open_at_quit(self)
        self.settings.sampling = self.sampling_bar.settings()
        self.settings.last_prompt = self.prompt.text
        self.settings.sync()
        self.worker.shutdown(5.0)
        self.autosaver.discard()
        super().closeEvent(event)


def panel_widgets(window: MainWindow) -> list[QWidget]:
    return [dock.widget() for dock in window.docks.values()]
