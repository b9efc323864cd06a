"""Animations of decoding for a slide: one head's attention map step by step, the causal mask growing a row
per step, as an animated GIF (or a lossless animated PNG), and a panel's picture copied to the clipboard.

The frames are the very files "Export every step" writes (export.export_attention at each step, same
size, theme and options), rendered to a scratch folder and read back, so an animation and the numbered
frames never differ. A GIF holds 256 colours per frame (Pillow picks them); an animated PNG keeps
every pixel. The file is written atomically (export.atomic_write); `progress(done, total)` is called
after each frame and `cancelled()` before it, and a cancel leaves nothing behind.
"""
from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
from PySide6.QtGui import QGuiApplication, QImage

from explorer.app.figures import export
from explorer.core.trace import Trace

SUFFIXES = (".gif", ".png")
FRAME_MS = 600                      # how long each step stays up


class AnimationCancelled(export.ExportError):
    """The person cancelled the animation; nothing was written."""


def frame_count(trace: Trace) -> int:
    """One frame per recorded step (the prompt's prefill, then each decoding step), as export_frames writes."""
    return trace.n_steps


def read_frame(path: Path) -> np.ndarray:
    """A written frame as (H, W, 3) uint8 RGB (Qt reads what Qt wrote)."""
    image = QImage(str(path)).convertToFormat(QImage.Format.Format_RGB888)
    rows = np.frombuffer(image.constBits(), np.uint8, image.bytesPerLine() * image.height())
    return rows.reshape(image.height(), image.bytesPerLine())[:, : 3 * image.width()].reshape(
        image.height(), image.width(), 3).copy()


def render_frames(trace: Trace, folder: Path, layer, head, progress=None, cancelled=None, **options) -> list[Path]:
    """Write the static frames of every step into `folder` (export_frames' names and pictures)."""
    total, written = frame_count(trace), []
    for step in range(total):
        if cancelled is not None and cancelled():
            raise AnimationCancelled("The animation was cancelled; nothing was written.")
        frame = folder / f"frame_{step:04d}.png"
        written.append(export.export_attention(trace, frame, layer, head, step=step, **options))
        if progress is not None:
            progress(step + 1, total)
    return written


def export_animation(trace: Trace, path: Path, layer, head, frame_ms: int = FRAME_MS,
                     progress: Callable[[int, int], None] | None = None,
                     cancelled: Callable[[], bool] | None = None, **options) -> Path:
    """Every step of one head (or a layer's heads, or the grid) as one animated GIF or PNG at `path`."""
    import imageio.v3 as iio

    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in SUFFIXES:
        raise export.ExportError(f"Cannot export {path}: an animation's name must end in .gif or .png.")
    if not trace or not trace.steps:
        raise export.ExportError(f"Cannot export {path}: there is no trace yet; run the model first.")
    export.check_writable(path)
    with tempfile.TemporaryDirectory(prefix="explorer-frames-") as scratch:
        frames = render_frames(trace, Path(scratch), layer, head, progress, cancelled, **options)
        pictures = np.stack([read_frame(frame) for frame in frames])           # (steps, H, W, 3)

        def write(temporary: str) -> None:
            keep = {"optimize": False} if suffix == ".png" else {}
            iio.imwrite(temporary, pictures, extension=suffix, duration=int(frame_ms), loop=0, **keep)
        return export.atomic_write(path, write)


def read_animation(path: Path) -> np.ndarray:
    """Every frame of an animated GIF or PNG as (frames, H, W, 3) uint8 RGB."""
    import imageio.v3 as iio

    frames = iio.imread(path, index=None, extension=Path(path).suffix.lower())
    return np.asarray(frames)[..., :3]


def ask_and_export_animation(parent, trace: Trace, layer, head, **options) -> None:
    """Ask where and how large, then write the animation with a progress dialog that can cancel it."""
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QApplication, QProgressDialog

    path = export.ask_path(parent, "Export an animation of decoding", f"attention_L{layer}_H{head}.gif",
                           "Animated GIF (*.gif);;Animated PNG, lossless (*.png)")
    size = export.ask_size(parent) if path is not None else None
    if path is None or size is None:
        return
    dialog = QProgressDialog("Drawing the frames…", "Cancel", 0, frame_count(trace), parent)
    dialog.setWindowModality(Qt.WindowModality.WindowModal)
    dialog.setMinimumDuration(300)

    def progress(done: int, total: int) -> None:
        dialog.setValue(done)
        QApplication.processEvents()

    theme = export.figure_theme(parent)
    options.setdefault("text_scale", export.figure_text_scale(parent))       # as the static frames

    def write() -> None:
        try:
            export_animation(trace, path, layer, head, size=size, theme=theme, progress=progress,
                             cancelled=dialog.wasCanceled, **options)
        except AnimationCancelled:
            pass                                # the person asked for it: nothing to report

    try:
        export.run_reporting(parent, write)
    finally:
        dialog.close()


def copy_figure(widget) -> QImage:
    """Put what `widget` (a panel) shows on the clipboard as an image, in the export figures' theme."""
    from explorer.app.window.theme import printed

    with printed(widget, export.figure_theme(widget)):
        image = widget.grab().toImage()
    QGuiApplication.clipboard().setImage(image)
    return image
