"""Animations of decoding for a slide: one head's attention map step by step, the causal mask growing a row
per step, as an animated GIF, a lossless animated PNG or an MP4 video (video.py), and a panel's picture copied
to the clipboard.

The frames are the very files "Export every step" writes (export.export_attention at each step, same
size, theme and options), rendered to a scratch folder and read back, so an animation and the numbered
frames never differ. A GIF holds 256 colours per frame (ffmpeg picks them); an animated PNG keeps
every pixel; an MP4 (H.264) plays in any player and slide program. Each is written a frame at a time
(frame_stream.py, video.py), each frame drawn, read back and written before the next is drawn, so
memory does not grow with the steps and progress and Cancel cover the writing. The file is written atomically
(export.atomic_write); `progress(done, total)` is called after each frame and `cancelled()` before it,
and a cancel leaves nothing behind. `write_animation` and
`with_progress` are the machinery any animation uses (kv_animation: the KV cache growing).
"""
from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication, QImage
from PySide6.QtWidgets import QApplication

from explorer.app.figures import export_dialogs, frame_stream, video
from explorer.app.widgets.dialog_focus import close_returning_focus
from explorer.app.widgets.steady_progress import SteadyProgress
from explorer.core.trace import Trace
from explorer.drawing import export
from explorer.drawing.colours import printed
from explorer.drawing.figures import attention_file_name

# The one list of what an animation can be written as: the file dialogs' filters, the menus' labels and the
# check of a chosen name are all read from it, so a format added here is offered, named and accepted at once.
FORMATS = {".gif": "Animated GIF", ".png": "Animated PNG, lossless", ".mp4": "MP4 video, H.264"}
SUFFIXES = tuple(FORMATS)
FRAME_MS = 600                      # how long each step stays up
ANIMATION_FILTERS = ";;".join(f"{name} (*{suffix})" for suffix, name in FORMATS.items())
# each writes an iterable of (H, W, 3) frames a frame at a time: memory does not grow with the frame count
STREAM_WRITERS = {".gif": frame_stream.write_gif, ".png": frame_stream.write_apng, ".mp4": video.write_video}


def formats_label() -> str:
    """The formats a menu names, in the dialog's order: "GIF/PNG/MP4"."""
    return "/".join(suffix.lstrip(".").upper() for suffix in SUFFIXES)


def suffix_list() -> str:
    """The suffixes as a sentence lists them: ".gif, .png or .mp4"."""
    return ", ".join(SUFFIXES[:-1]) + f" or {SUFFIXES[-1]}" if len(SUFFIXES) > 1 else SUFFIXES[0]


class AnimationCancelled(export.ExportError):
    """The person cancelled the animation; nothing was written."""


ENCODER_STEPS = "An encoder reads the whole text in one step: there is nothing to animate."
ONE_STEP = ("The run has only its prompt (step 0), so an animation would be a single frame: decode a token or more "
            "first (Step, Space).")


def not_animated(trace: Trace | None, encoder_why: str) -> str:
    """Why `trace` has nothing to animate, in one sentence ('' where it has): no trace, an encoder (`encoder_why`),
    or a run of its prompt alone, whose animation wrote a single frame without a word."""
    if trace is None or not trace.steps:
        return "There is no run yet: run the model first."
    if trace.model.is_encoder_only:
        return encoder_why
    return ONE_STEP if trace.n_steps < 2 else ""


def offer_animation(action, trace: Trace | None, encoder_why: str) -> None:
    """Offer `action`, an animation of `trace`'s steps, only where there is something to animate: greyed while
    there is no trace, for an encoder, which reads its text in one pass (`encoder_why`), and for a run of its
    prompt alone (ONE_STEP), the reason as its tooltip and status tip (MiniLM's menus wrote a GIF of one frame,
    or asked for a file only to refuse it)."""
    why = not_animated(trace, encoder_why)
    action.setEnabled(not why)
    tip = why if trace is not None and trace.steps else ""         # greyed without a trace: nothing to explain
    action.setToolTip(tip)
    action.setStatusTip(tip)


def refused(parent, trace: Trace | None, encoder_why: str) -> bool:
    """Whether an animation of `trace` is refused, said before any dialog asks for a file (an action triggered
    while it was offered, its trace replaced since): the reason in the window's one error line."""
    why = not_animated(trace, encoder_why)
    if why:
        export_dialogs.report_failure(parent, why)
    return bool(why)


def frame_count(trace: Trace) -> int:
    """One frame per recorded step (the prompt's prefill, then each decoding step), as export_frames writes."""
    return trace.n_steps


def read_frame(path: Path) -> np.ndarray:
    """A written frame as (H, W, 3) uint8 RGB (Qt reads what Qt wrote)."""
    image = QImage(str(path)).convertToFormat(QImage.Format.Format_RGB888)
    rows = np.frombuffer(image.constBits(), np.uint8, image.bytesPerLine() * image.height())
    return rows.reshape(image.height(), image.bytesPerLine())[:, : 3 * image.width()].reshape(
        image.height(), image.width(), 3).copy()


def drawn_pictures(folder: Path, total: int, draw: Callable[[int, Path], Path], progress=None,
                   cancelled=None):
    """Each of `total` frames as (H, W, 3) RGB when the writer asks for it: `draw(i, folder / frame_000i.png)`,
    read back, its file in `folder` removed. `cancelled()` is asked before each frame (AnimationCancelled), and
    `progress(done, total)` told once the writer has taken it, so that progress and Cancel cover the writing."""
    for index in range(total):
        if cancelled is not None and cancelled():
            raise AnimationCancelled("The animation was cancelled; nothing was written.")
        frame = Path(draw(index, folder / f"frame_{index:04d}.png"))
        picture = read_frame(frame)
        if frame.parent == folder:                # a frame drawn elsewhere (a live recording's) is its owner's
            frame.unlink()
        yield picture
        if progress is not None:
            progress(index + 1, total)


def check_target(path: Path, trace: Trace) -> str:
    """The animation's suffix (.gif, .png or .mp4) once `path` can be written and `trace` has steps; else one
    sentence."""
    suffix = Path(path).suffix.lower()
    if suffix not in SUFFIXES:
        raise export.ExportError(f"Cannot export {path}: an animation's name must end in {suffix_list()}.")
    if not trace or not trace.steps:
        raise export.ExportError(f"Cannot export {path}: there is no trace yet; run the model first.")
    export.check_writable(Path(path))
    return suffix


def write_animation(path: Path, total: int, draw: Callable[[int, Path], Path], frame_ms: int = FRAME_MS,
                    progress: Callable[[int, int], None] | None = None,
                    cancelled: Callable[[], bool] | None = None) -> Path:
    """The `total` frames `draw` writes as PNGs, each read back and streamed into one animated GIF or PNG, or
    an MP4, at `path` as soon as it is drawn (drawn_pictures), atomically: a cancel or a failure leaves nothing
    behind."""
    path = Path(path)
    writer = STREAM_WRITERS[path.suffix.lower()]
    with tempfile.TemporaryDirectory(prefix="explorer-frames-") as scratch:
        pictures = drawn_pictures(Path(scratch), total, draw, progress, cancelled)
        try:
            return export.atomic_write(path, lambda temporary: writer(temporary, pictures, frame_ms))
        except export.ExportError as error:     # a frame's write failed: the sentence names what was asked for
            if getattr(error, "path", None) is None or Path(error.path).parent != Path(scratch):
                raise
            raise export.ExportError(f"Cannot write {path}: its frames could not be drawn in {scratch}: "
                                     f"{error.reason}.") from None


def export_animation(trace: Trace, path: Path, layer, head, frame_ms: int = FRAME_MS,
                     progress: Callable[[int, int], None] | None = None,
                     cancelled: Callable[[], bool] | None = None, **options) -> Path:
    """Every step of one head (or a layer's heads, or the grid) as one animated GIF or PNG at `path`."""
    check_target(path, trace)

    def draw(step: int, frame: Path) -> Path:
        return export.export_attention(trace, frame, layer, head, step=step, caption=export.step_caption(trace, step),
                                       **options)
    return write_animation(path, frame_count(trace), draw, frame_ms, progress, cancelled)


def read_animation(path: Path) -> np.ndarray:
    """Every frame of an animated GIF or PNG, or an MP4, as (frames, H, W, 3) uint8 RGB."""
    import imageio.v3 as iio  # start-up: imageio takes a second to import, only for reading back

    frames = iio.imread(path, index=None, extension=Path(path).suffix.lower())
    return np.asarray(frames)[..., :3]


def ask_and_export_animation(parent, trace: Trace, layer, head, **options) -> None:
    """Ask where and how large, then write the animation with a progress dialog that can cancel it."""
    if refused(parent, trace, ENCODER_STEPS):
        return
    name = attention_file_name(trace, layer, head, "gif", options.get("cross", False), options.get("kind"))
    path = export_dialogs.ask_path(parent, "Export an animation of decoding", name, ANIMATION_FILTERS)
    size = export_dialogs.ask_size(parent) if path is not None else None
    if path is None or size is None:
        return
    theme = export_dialogs.figure_theme(parent)
    options.setdefault("text_scale", export_dialogs.figure_text_scale(parent))       # as the static frames
    with_progress(parent, frame_count(trace), lambda progress, cancelled: export_animation(
        trace, path, layer, head, size=size, theme=theme, progress=progress, cancelled=cancelled, **options))


SHOWN_AFTER_MS = 300       # an animation of a few frames is written before any dialog shows


def with_progress(parent, total: int, write: Callable[[Callable, Callable], object]) -> object:
    """`write(progress, cancelled)` under the app's progress dialog (SteadyProgress: its Cancel stays where it
    is aimed at, whatever the label says); what it wrote is said in the status bar, a failure reaches the
    window's error line (export_dialogs.run_reporting), a cancel nothing (the person asked for it). Returns
    what `write` returned, None after a cancel or a failure."""
    dialog = SteadyProgress(f"Drawing frame 1 of {total}…", total, parent, "Exporting an animation")
    dialog.setWindowModality(Qt.WindowModality.WindowModal)
    dialog.setMinimumDuration(SHOWN_AFTER_MS)
    dialog.setValue(0)                  # no frame drawn yet (a dialog starts at -1: nothing to say)

    def progress(done: int, total: int) -> None:
        dialog.setMaximum(total)
        dialog.setValue(done)
        dialog.setLabelText(f"Drawing frame {min(done + 1, total)} of {total}…" if done < total else
                            f"Writing the {total} frames…")
        QApplication.processEvents()

    def run():
        try:
            return write(progress, dialog.wasCanceled)
        except AnimationCancelled:
            return None

    try:
        return export_dialogs.run_reporting(parent, run)
    finally:
        close_returning_focus(dialog)
        dialog.deleteLater()


def copy_figure(widget) -> QImage:
    """Put what `widget` (a panel) shows on the clipboard as an image, in the export figures' theme."""
    with printed(widget, export_dialogs.figure_theme(widget)):
        image = widget.grab().toImage()
    QGuiApplication.clipboard().setImage(image)
    return image
