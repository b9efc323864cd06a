"""The whole window as an animation of decoding, for a slide or a screencast: File ▸ Export ▸ Record the
Window While Stepping… shows every recorded step in turn (the prefill, then each decoding step), as the Mask
panel's step slider does, and grabs the window (QWidget.grab) once each step is drawn: one frame per step, as
every other animation and "Export every step". The frames are written as an animated GIF, a lossless APNG or an
MP4 video with animation.write_animation: progress and Cancel, an atomic write, one sentence on failure.

The step is chosen as a person chooses it, through the session's selection, so every panel draws the step it is
shown (the attention map a row per step, the mask, the KV cache, the Tokens table and its T) and so does the status
bar ("step 0 (prefill) of 3 · 7 tokens"); each frame is the window as it stands, in the window's own theme. The
selection the person had is given back, whether the recording ends, fails or is cancelled.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path

from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QImage
from PySide6.QtWidgets import QApplication, QDockWidget, QWidget

from explorer.app.figures import export_dialogs
from explorer.app.figures.animation import ANIMATION_FILTERS, FRAME_MS, check_target, with_progress, write_animation
from explorer.drawing import export

SETTLE_S = 10.0        # at most this long for the model thread and the panels' drawings in turns to finish a step
QUIET_PASSES = 2       # passes of the event loop in a row with nothing asked nor drawing: the step is drawn
STEADY_TRIES = 4       # grabs at most, a settle apart, until two in a row agree


def record_window(window, path: Path, frame_ms: int = FRAME_MS, progress: Callable[[int, int], None] | None = None,
                  cancelled: Callable[[], bool] | None = None) -> Path:
    """Show each recorded step of `window.session.trace` in `window`, grab the window, and write the frames
    as one animation at `path` (.gif, .png or .mp4); the selection is given back afterwards."""
    session = window.session
    settle(window)                   # a panel's question to the model thread is answered first
    trace = session.trace
    check_target(path, trace)
    if session.busy:                 # still busy: a run, whose steps would change under the recording
        raise export.ExportError(f"Cannot record {path}: the model is running; stop it or let it finish first.")
    kept = session.selection
    size: list[QSize] = []           # the first frame's size: every frame has it, should the window be resized

    def draw(step: int, frame: Path) -> Path:
        session.select(step=None if step == trace.n_steps - 1 else step)     # None: the latest, as the slider
        settle(window)
        return save_image(steady_grab(window), frame, size)
    try:
        with steady_caret():
            return write_animation(path, trace.n_steps, draw, frame_ms, progress, cancelled)
    finally:
        now = session.selection
        session.select(**{name: value for name, value in asdict(kept).items() if getattr(now, name) != value})


@contextmanager
def steady_caret():
    """The text cursor of the field holding the focus drawn steadily while the frames are grabbed, its blinking
    given back after: a field of the window holding the focus (attention's layer box) blinked its caret in and
    out of the frames as their grabs fell (CI: frame 0 differed from the window at step 0 in that caret's 14 px)."""
    app = QApplication.instance()
    flash = app.cursorFlashTime()
    app.setCursorFlashTime(0)                  # 0: the caret does not blink
    try:
        yield
    finally:
        app.setCursorFlashTime(flash)


def settle(window) -> None:
    """Wait (at most SETTLE_S) until the window shows the step selected: the redraws a selection change posted
    delivered, the model-thread answers some panels asked for drawn, and no visible panel still drawing in
    turns (Panel.drawing, widgets/turns.py), so that a frame shows every panel at its step and never a panel's
    'working' or 'Drawing…' state, nor the step before. Quiet means quiet twice running: an answer delivered
    by the last pass of the event loop may start a drawing of its own."""
    QApplication.processEvents()
    deadline = time.monotonic() + SETTLE_S
    quiet = 0
    while quiet < QUIET_PASSES and time.monotonic() < deadline:
        busy = getattr(getattr(window, "worker", None), "busy", False) or drawing_panels(window)
        quiet = 0 if busy else quiet + 1
        if busy:
            time.sleep(0.01)
        QApplication.processEvents()


def drawing_panels(window) -> list[QWidget]:
    """The panels in sight whose drawing has parts still to run in later turns of the event loop."""
    panels = (dock.widget() for dock in window.findChildren(QDockWidget))
    return [panel for panel in panels if callable(getattr(panel, "is_shown", None)) and panel.is_shown()
            and getattr(panel, "drawing", False) is True]


def steady_grab(window) -> QImage:
    """The window as it stands once drawing it changes it no more. A paint can change what the next paint
    shows: pyqtgraph sizes an axis as it paints its labels, and the view laid out again for it (and the tiles
    scrolled back into sight) shows only after a later pass of the event loop; a window not yet repainted since
    the step was selected is first painted by the grab itself. So the window is grabbed, settled and grabbed
    again until two grabs in a row agree (at most STEADY_TRIES grabs: something that animates never agrees)."""
    image = window.grab().toImage()
    for _ in range(STEADY_TRIES - 1):
        settle(window)
        again = window.grab().toImage()
        if again == image:
            break
        image = again
    return image


def save_grab(window, frame: Path, size: list[QSize]) -> Path:
    """The window grabbed to `frame` (PNG), at the first frame's size."""
    return save_image(window.grab().toImage(), frame, size)


def save_image(image: QImage, frame: Path, size: list[QSize]) -> Path:
    """`image` (a grab of the window) written to `frame` (PNG), at the first frame's size."""
    if not size:
        size.append(image.size())
    elif image.size() != size[0]:
        image = image.scaled(size[0], Qt.AspectRatioMode.IgnoreAspectRatio,
                             Qt.TransformationMode.SmoothTransformation)
    if not image.save(str(frame), "PNG"):
        raise export.ExportError(f"Cannot write a frame of the window to {frame.parent}: the scratch folder "
                                 "could not take it (is the disk full?).")
    return frame


def ask_and_record_window(window) -> None:
    """Ask where, then record the window stepping through the trace under a progress dialog with Cancel."""
    trace = window.session.trace
    if trace is None or not trace.steps:
        window.show_error("Nothing to record yet; run the prompt first.")
        return
    path = export_dialogs.ask_path(window, "Record the window while stepping", "window.mp4", ANIMATION_FILTERS)
    if path is None:
        return
    with_progress(window, trace.n_steps, lambda progress, cancelled: record_window(
        window, path, progress=progress, cancelled=cancelled))
