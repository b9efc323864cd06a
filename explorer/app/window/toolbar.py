"""The decoding toolbar (Run, Step, Back, Play/Pause, Reset) and the sampling controls.

The actions carry the keyboard shortcuts (Space steps, Backspace steps back,
Ctrl+Enter runs) and are shared with the Decode menu. The toolbars only emit;
the controller decides what a press means.
"""
from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, QTimer, Signal
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QCheckBox, QDoubleSpinBox, QLabel, QMainWindow, QSpinBox, QToolBar, QWidget

from explorer.app.thread.core_api import SamplingSettings
from explorer.app.window import dock_layout

NO_MODEL_REASON = "open a model first (the Model box or File ▸ Open)."


class DecodingActions:
    """The decoding QActions, created once and placed in the toolbar and the Decode menu."""

    def __init__(self, parent: QWidget) -> None:
        def action(text: str, shortcut: str | None, tip: str, checkable: bool = False) -> QAction:
            act = QAction(text, parent)
            if shortcut:
                act.setShortcut(QKeySequence(shortcut))
            act.setToolTip(f"{tip} ({shortcut})" if shortcut else tip)
            act.setStatusTip(tip)
            act.setCheckable(checkable)
            parent.addAction(act)            # shortcuts work wherever the focus is in the window
            return act

        self.run = action("Run", "Ctrl+Return", "Prefill the prompt: one pass over every token")
        self.step = action("Step", "Space", "Decode one more token")
        self.back = action("Back", "Backspace", "Undo the last token")
        self.play = action("Play", "Ctrl+Space", "Keep stepping at the chosen speed", checkable=True)
        self.reset = action("Reset", "Ctrl+R", "Clear the trace")
        self.stop = action("Stop", "Escape", "Cancel what the model is doing")
        self._usual_tips = {act: act.toolTip() for act in self.needing_a_model()}
        self._model_open = False              # no model at launch, until one opens or is on its way
        self._step_reason: str | None = None  # why the model open cannot step (an encoder), or None
        self._apply()

    def all(self) -> list[QAction]:
        return [self.run, self.step, self.back, self.play, self.reset, self.stop]

    def needing_a_model(self) -> list[QAction]:
        """The presses that ask the model for a run: with no model they mean nothing."""
        return [self.run, self.step, self.back, self.play]

    def follow(self, controller) -> None:
        """Enable the presses by what `controller` holds: a model open, or one on its way (a press made
        while it loads waits for it), whenever the model or the loading changes."""
        def show(*_) -> None:
            self.set_model_open(controller.summary is not None or controller.loading is not None,
                                getattr(controller.summary, "no_step_reason", None))

        controller.model_changed.connect(show)
        controller.loading_changed.connect(show)
        show()

    def set_model_open(self, model_open: bool, step_reason: str | None = None) -> None:
        self._model_open, self._step_reason = model_open, step_reason
        self._apply()

    def _apply(self) -> None:
        """The one rule for Run, Step, Back and Play: a model must be open (Step, Back and Play: one that
        decodes). A disabled action's shortcut does nothing, so no press asks for a model that is not there;
        its tooltip says why it is off."""
        for act in self.needing_a_model():
            reason = NO_MODEL_REASON if not self._model_open else None if act is self.run else self._step_reason
            if reason is not None and act.isChecked():
                act.setChecked(False)
            act.setEnabled(reason is None)
            act.setToolTip(self._usual_tips[act] if reason is None else f"{act.text()} is off: {reason}")
            act.setStatusTip(act.toolTip())


class DecodingToolbar(QToolBar):
    """Run, Step, Back, Play/Pause with a speed, Reset, Stop."""

    def __init__(self, actions: DecodingActions, parent: QWidget | None = None) -> None:
        super().__init__("Decoding", parent)
        self.setObjectName("decoding_toolbar")
        for act in (actions.run, actions.step, actions.back, actions.play):
            self.addAction(act)
        self.speed = QDoubleSpinBox()
        self.speed.setObjectName("speed")
        self.speed.setRange(0.2, 30.0)
        self.speed.setSingleStep(0.5)
        self.speed.setValue(2.0)
        self.speed.setSuffix(" tok/s")
        self.speed.setToolTip("Play speed: tokens per second (the model may be slower)")
        self.addWidget(self.speed)
        self.addAction(actions.reset)
        self.addAction(actions.stop)
        actions.play.toggled.connect(lambda on: actions.play.setText("Pause" if on else "Play"))


class SamplingToolbar(QToolBar):
    """Greedy or sampled: temperature, top-k, top-p and the seed. Emits `sampling_changed`."""

    sampling_changed = Signal(object)      # SamplingSettings

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Sampling", parent)
        self.setObjectName("sampling_toolbar")
        self.greedy = QCheckBox("Greedy")
        self.greedy.setToolTip("Always take the most probable token (temperature 0)")
        self.greedy.setChecked(True)
        self.addWidget(self.greedy)
        self.temperature = self._spin(QDoubleSpinBox(), "T", (0.05, 5.0), 0.8, "Temperature: p ∝ exp(logit / T)")
        self.temperature.setSingleStep(0.1)
        self.top_k = self._spin(QSpinBox(), "top-k", (0, 100000), 0, "Keep the k most probable tokens (0: all)")
        self.top_p = self._spin(QDoubleSpinBox(), "top-p", (0.01, 1.0), 1.0,
                                "Keep the smallest set of tokens whose probability reaches p")
        self.top_p.setSingleStep(0.05)
        self.seed = self._spin(QSpinBox(), "seed", (0, 2**31 - 1), 0, "Random seed: the same seed repeats a run")
        self.greedy.toggled.connect(self._on_control_changed)
        self._on_control_changed()

    def _spin(self, spin, label: str, bounds, value, tip: str):
        spin.setRange(*bounds)
        spin.setValue(value)
        spin.setToolTip(tip)
        spin.setObjectName(label.replace("-", "_").lower())
        spin.setKeyboardTracking(False)
        text = QLabel(f" {label} ")
        text.setToolTip(tip)
        self.addWidget(text)
        self.addWidget(spin)
        spin.valueChanged.connect(self._on_control_changed)
        return spin

    def settings(self) -> SamplingSettings:
        temperature = 0.0 if self.greedy.isChecked() else round(float(self.temperature.value()), 4)
        return SamplingSettings(temperature=temperature, top_k=int(self.top_k.value()),
                                top_p=round(float(self.top_p.value()), 4), seed=int(self.seed.value()))

    def set_settings(self, sampling: SamplingSettings) -> None:
        """Show `sampling` (e.g. from a session) and emit it once."""
        widgets = (self.greedy, self.temperature, self.top_k, self.top_p, self.seed)
        for widget in widgets:
            widget.blockSignals(True)
        self.greedy.setChecked(sampling.greedy)
        if not sampling.greedy:
            self.temperature.setValue(sampling.temperature)
        self.top_k.setValue(sampling.top_k)
        self.top_p.setValue(sampling.top_p)
        self.seed.setValue(sampling.seed)
        for widget in widgets:
            widget.blockSignals(False)
        self._on_control_changed()

    def _on_control_changed(self, *_) -> None:
        sampled = not self.greedy.isChecked()
        for widget in (self.temperature, self.top_k, self.top_p):
            widget.setEnabled(sampled)
        self.sampling_changed.emit(self.settings())



class ToolbarRows(QObject):
    """The window's toolbars in as many rows as its width needs (dock_layout.toolbar_rows), again whenever
    the window's width or the text size changes: in one row Qt folds what does not fit behind a
    toolbar's » button, and in View ▸ Presentation at 1366 px top-k, top-p and the seed were there."""

    def __init__(self, window: QMainWindow) -> None:
        super().__init__(window)
        self.window = window
        self._pending = False
        window.installEventFilter(self)
        self.flow()

    def eventFilter(self, watched, event) -> bool:
        if watched is self.window and event.type() in (QEvent.Type.Resize, QEvent.Type.FontChange):
            if not self._pending:             # once the toolbars have measured their widgets again
                self._pending = True
                QTimer.singleShot(0, self, self.flow)
        return False

    def flow(self) -> None:
        """Each toolbar where its row begins after a break, the others after the one before them. When the
        rows change, every toolbar is added again in order: moved to a row of its own by a break alone, a
        toolbar kept the place it had in the row before (the sampling bar started at x 1,086 of its new
        row, and folded all it could not show there)."""
        self._pending = False
        bars = dock_layout.top_toolbars(self.window)
        starts = dock_layout.toolbar_rows([bar.sizeHint().width() for bar in bars], self.window.width(),
                                          dock_layout.toolbar_rows_most(self.window))
        if [self.window.toolBarBreak(bar) for bar in bars[1:]] == [index in starts for index in range(1, len(bars))]:
            return
        for index, bar in enumerate(bars):
            if index > 0 and index in starts:
                self.window.addToolBarBreak()
            self.window.addToolBar(bar)
            bar.show()
