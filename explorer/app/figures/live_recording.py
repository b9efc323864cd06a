"""The window recorded live, as a screencast of decoding: File ▸ Export ▸ Start Recording the Window Live… asks for
a file, and from then on every step the window is given (Decode ▸ Step, a generation, a new prompt's prefill)
is grabbed once the window has drawn it (QWidget.grab): one frame per step. The status bar says
"● Recording" with the frames so far, beside Stop and Save and Cancel (left out of the frames); the same
menu item then reads Stop Recording and Save.

A step is a new last StepRecord in the trace (records are immutable and shared between traces, so a trace
sent again unchanged is no new step). Its frame waits for the panels' questions to the model thread to be
answered (at most window_animation.SETTLE_S), not for a generation in progress, whose next step may come at
once: when a step comes before the last one's frame was taken, that frame is taken at once, as the new step
arrives (Session.trace_arriving) and before any panel draws it, so each frame shows exactly its own step.
Every frame has the first frame's size (a resized window is scaled to it).

The frames wait on disk in a scratch folder, so a long recording takes no memory; Stop writes them as an
animated GIF, a lossless APNG or an MP4 with animation.write_animation (a frame at a time, progress and
Cancel, atomically: a temporary file in the target folder, renamed at the end). Cancel, or a window closed
while recording, removes the scratch folder and writes nothing.
"""
from __future__ import annotations

import tempfile
import time
from pathlib import Path

from PySide6.QtCore import QObject, QSize, QTimer, Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QWidget

from explorer.app.figures import export_dialogs, window_animation
from explorer.app.figures.animation import (
    ANIMATION_FILTERS,
    FRAME_MS,
    SUFFIXES,
    suffix_list,
    with_progress,
    write_animation,
)
from explorer.drawing import export

POLL_MS = 30            # how often a pending frame looks whether the window has settled
RECORDING_RED = "#d93025"


class LiveRecording(QObject):
    """Grabs `window` after each new step until `stop()` writes the frames to `path`, or `cancel()`."""

    frames_changed = Signal(int)          # frames taken so far
    ended = Signal()                      # stopped (written or not) or cancelled

    def __init__(self, window, path: Path, frame_ms: int = FRAME_MS) -> None:
        super().__init__(window)
        self.window, self.path, self.frame_ms = window, check_recording_target(path), frame_ms
        self._scratch = tempfile.TemporaryDirectory(prefix="explorer-recording-")
        self.destroyed.connect(self._scratch.cleanup)          # the window deleted while recording: no frames left
        self.frames: list[Path] = []
        self._size: list[QSize] = []
        self._last = step_key(window.session.trace)           # the step shown when recording began: no frame
        self._pending_since: float | None = None
        self._timer = QTimer(self, interval=POLL_MS)
        self._timer.timeout.connect(self._take_if_settled)
        window.session.trace_arriving.connect(self._on_trace_arriving)
        window.session.trace_changed.connect(self._on_trace)
        self._worker = getattr(window, "worker", None)
        if self._worker is not None:       # the panels' answers in: the frame at once, before Play steps again
            self._worker.busy_changed.connect(self._on_worker_busy)
        self.indicator = RecordingIndicator(self)
        window.statusBar().addPermanentWidget(self.indicator)

    @property
    def pending(self) -> bool:
        return self._pending_since is not None

    def _on_trace_arriving(self, trace) -> None:
        """A new step came before the last one's frame was taken: that frame is taken now, while the window
        still shows the last step (no panel has the new trace yet), so no frame shows the step after its own."""
        key = step_key(trace)
        if self.pending and key is not None and key != self._last:
            self._take()

    def _on_trace(self, trace) -> None:
        key = step_key(trace)
        if key is None or key == self._last:
            return
        self._last = key
        if self.pending:                  # not told before the panels (trace_arriving): taken now all the same
            self._take()
        self._pending_since = time.monotonic()
        self._timer.start()

    def _on_worker_busy(self, busy: bool) -> None:
        if not busy and self.pending:
            QTimer.singleShot(0, self, self._take_if_settled)    # after the redraws posted before it; not once deleted

    def _take_if_settled(self) -> None:
        if not self.pending:
            return
        worker = self._worker
        asking = worker is not None and worker.busy and not self.window.session.busy   # panels' questions, no run
        if asking and time.monotonic() - self._pending_since < window_animation.SETTLE_S:
            return
        self._take()

    def _take(self) -> None:
        self._timer.stop()
        self._pending_since = None
        frame = Path(self._scratch.name) / f"frame_{len(self.frames):05d}.png"
        self.indicator.setVisible(False)          # the recording shows the window, not its own "● Recording"
        try:
            self.frames.append(window_animation.save_grab(self.window, frame, self._size))
        finally:
            self.indicator.setVisible(True)
        self.frames_changed.emit(len(self.frames))

    def _finish(self) -> None:
        self._timer.stop()
        self._pending_since = None
        self.window.session.trace_arriving.disconnect(self._on_trace_arriving)
        self.window.session.trace_changed.disconnect(self._on_trace)
        if self._worker is not None:
            self._worker.busy_changed.disconnect(self._on_worker_busy)
        self.window.statusBar().removeWidget(self.indicator)
        self.indicator.deleteLater()
        self.ended.emit()

    def stop(self, progress=None, cancelled=None) -> Path:
        """Take the frame still waiting, write every frame to `path`, and end (ExportError when there is none)."""
        if self.pending:
            self._take()
        self._finish()
        try:
            if not self.frames:
                raise export.ExportError(f"Nothing was recorded to {self.path}: no step was taken while recording "
                                         "(Decode ▸ Step takes one).")
            frames = self.frames
            return write_animation(self.path, len(frames), lambda index, _scratch: frames[index], self.frame_ms,
                                   progress, cancelled)
        finally:
            self._scratch.cleanup()

    def cancel(self) -> None:
        """End without writing anything; the frames taken are removed."""
        self._finish()
        self._scratch.cleanup()


class RecordingIndicator(QWidget):
    """The status bar's "● Recording, N frames" with Stop and Save, and Cancel."""

    def __init__(self, recording: LiveRecording) -> None:
        super().__init__()
        self.label = QLabel()
        self.label.setStyleSheet(f"color: {RECORDING_RED}; font-weight: bold;")
        self.stop_button = QPushButton("Stop and Save")
        self.cancel_button = QPushButton("Cancel")
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        for widget in (self.label, self.stop_button, self.cancel_button):
            layout.addWidget(widget)
        self.show_frames(0)
        recording.frames_changed.connect(self.show_frames)
        self.stop_button.clicked.connect(lambda: stop_and_save(recording))
        self.cancel_button.clicked.connect(recording.cancel)

    def show_frames(self, count: int) -> None:
        self.label.setText(f"● Recording: {count} frame{'' if count == 1 else 's'}")


def step_key(trace) -> tuple[int, int] | None:
    """What tells one step from another: the step count and the last step's record (None without steps)."""
    if trace is None or not trace.steps:
        return None
    return trace.n_steps, id(trace.steps[-1])


def check_recording_target(path: Path) -> Path:
    """`path` once it names an animation in a folder that can be written; else one sentence."""
    path = Path(path)
    if path.suffix.lower() not in SUFFIXES:
        raise export.ExportError(f"Cannot record to {path}: an animation's name must end in {suffix_list()}.")
    return export.check_writable(path)


def stop_and_save(recording: LiveRecording) -> None:
    """Stop `recording` and write its frames under a progress dialog with Cancel (errors in one sentence)."""
    window = recording.window
    with_progress(window, max(len(recording.frames), 1), lambda progress, cancelled: recording.stop(
        progress, cancelled))


def ask_and_start(window) -> LiveRecording | None:
    """Ask where the recording goes, then start it; None when the person chose nothing or the name is wrong."""
    path = export_dialogs.ask_path(window, "Record the window live", "recording.mp4", ANIMATION_FILTERS)
    if path is None:
        return None
    try:
        recording = LiveRecording(window, path)
    except export.ExportError as error:
        window.show_error(str(error))
        return None
    window.status.showMessage("Recording the window: each step is a frame. Stop and Save writes the file.", 6000)
    return recording
