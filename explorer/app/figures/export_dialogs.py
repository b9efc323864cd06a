"""The window's side of the exports: the dialogs that ask where to write a figure and at what size,
the figure theme and text size chosen in the settings, and a panel's "as shown on screen" action.

The files themselves are written by explorer.drawing.export, which the CLI calls too.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QTimer
from PySide6.QtGui import QAction, QImageReader
from PySide6.QtWidgets import QDockWidget, QFileDialog, QInputDialog, QStatusBar

from explorer.app.figures.figure_settings import FigureSettings
from explorer.core import files
from explorer.core.errors import ExplorerError
from explorer.core.units import human_bytes
from explorer.drawing.export import (
    DATA_SUFFIXES,
    DEFAULT_SIZE,
    default_size,
    export_attention,
    export_frames,
    save_widget,
)
from explorer.drawing.figures import attention_file_name


def figure_settings(widget=None) -> FigureSettings:
    """The settings of the window that holds `widget` (its AppSettings are FigureSettings), else the person's."""
    while widget is not None:
        settings = getattr(widget, "settings", None)
        if isinstance(settings, FigureSettings):
            return settings
        widget = widget.parent()
    return FigureSettings()


def figure_theme(widget=None) -> str:
    """The figure theme chosen (File ▸ Dark Export Figures) in the window that holds `widget`, else in
    the person's settings: 'light' unless 'dark'."""
    return figure_settings(widget).figure_theme


def figure_text_scale(widget=None) -> float:
    """The text size chosen for exported figures (File ▸ Export Figure Text Size), as figure_theme."""
    return figure_settings(widget).figure_text_scale


def last_folder() -> str:
    return FigureSettings().last_folder


def ask_path(parent, title: str, name: str, filters: str) -> Path | None:
    """A save dialog that opens in, and remembers, the last export folder, proposing `name` under the filter
    that takes its suffix (Qt selects the first otherwise: "window.mp4" stood under "Animated GIF (*.gif)"). A
    name chosen without a suffix is given the chosen filter's."""
    chosen, chosen_filter = QFileDialog.getSaveFileName(
        parent, title, str(Path(last_folder()) / name), filters, filter_of(name, filters))
    if not chosen:
        return None
    if not Path(chosen).suffix and filter_suffixes(chosen_filter):
        chosen += filter_suffixes(chosen_filter)[0]
    FigureSettings().last_folder = str(Path(chosen).parent)
    return Path(chosen)


def filter_suffixes(name_filter: str) -> list[str]:
    """The suffixes a dialog filter takes: "Images (*.png *.svg)" -> ['.png', '.svg']."""
    return [suffix.lower() for suffix in re.findall(r"\*(\.[\w.]+)", name_filter or "")]


def filter_of(name: str, filters: str) -> str:
    """The filter of `filters` (";;"-separated) that takes `name`'s suffix, else the first."""
    offered = filters.split(";;")
    suffix = Path(name).suffix.lower()
    return next((f for f in offered if suffix and suffix in filter_suffixes(f)), offered[0])


def ask_size(parent, default: tuple[int, int] = DEFAULT_SIZE) -> tuple[int, int] | None:
    """Ask the pixel size of a PNG (SVG uses it as its nominal size), offering `default`."""
    text, ok = QInputDialog.getText(parent, "Image size", "Width × height in pixels:", text="{}x{}".format(*default))
    match = re.fullmatch(r"\s*(\d+)\s*[x×,\s]\s*(\d+)\s*", text or "")
    if not ok or not match:
        return None
    return max(16, int(match.group(1))), max(16, int(match.group(2)))


def run_reporting(parent, action: Callable[[], object]) -> object:
    """Run `action`, a save; what it wrote (a path, or a list of them) is said in the status bar (saved_line),
    and a failure reaches the window's one error line (report_failure) as one sentence naming the file, never a
    traceback. Returns what `action` returned, None after a failure."""
    try:
        written = action()
    except ExplorerError as error:
        report_failure(parent, str(error))
        return None
    except OSError as error:            # a write outside core.files.write_atomic: still one sentence
        where = f" {error.filename}" if error.filename else ""
        report_failure(parent, f"Cannot write{where}: {files.reason(error)}.")
        return None
    report_saved(parent, written)
    return written


def report_failure(parent, message: str) -> None:
    """The window's one door for errors: its session's report_error (the status bar's error line, and a dialog
    of its first line); outside a window, raised."""
    widget = parent
    while widget is not None and getattr(widget, "session", None) is None:
        widget = widget.parentWidget()
    if widget is None:
        raise ExplorerError(message)
    widget.session.report_error(message)


def report_saved(parent, written) -> None:
    """Say in the status bar of `parent`'s window what was written (StatusLine.show_saved); nothing outside a
    window, or when nothing was written (a dialog cancelled). The window's top parent, not `parent.window()`:
    a floating dock is a window of its own."""
    say_in_status(parent, saved_line(written))


def say_in_status(parent, line: str) -> None:
    """Show `line` in the status bar of `parent`'s window (its top parent's: a floating dock is a window of its
    own), as a saved line stays (StatusLine.show_saved); nothing outside a window, or for an empty line."""
    top = parent
    while top is not None and top.parentWidget() is not None:
        top = top.parentWidget()
    status = top.findChild(QStatusBar) if top is not None and line else None
    if status is None:
        return
    if hasattr(status, "show_saved"):           # the window's StatusLine: how long a saved line stays up
        status.show_saved(line)
    else:
        status.showMessage(line)


def saved_line(written) -> str:
    """'Saved head.png (640×480 px)'; 'Saved 3 frames, head_0000.png … head_0002.png (640×480 px)'; a matrix or a
    video 'Saved a.csv (1.20 KiB)'; '' when nothing was written. The size is read from the file written."""
    paths = [Path(p) for p in (written if isinstance(written, (list, tuple)) else [written])
             if isinstance(p, (str, Path)) and Path(p).is_file()]
    if not paths:
        return ""
    first, last = paths[0], paths[-1]
    names = first.name if len(paths) == 1 else f"{len(paths)} frames, {first.name} … {last.name}"
    size = image_size(last)
    if size is not None:
        return f"Saved {names} ({size[0]}×{size[1]} px)"
    return f"Saved {names} ({human_bytes(sum(p.stat().st_size for p in paths))})"


def image_size(path: Path) -> tuple[int, int] | None:
    """An image file's width and height in pixels as a reader finds them (an SVG's: its view box, the pixels it
    was drawn in; a panel's SVG gives its width in millimetres), or None for a file that is not an image."""
    if path.suffix.lower() == ".svg":
        from PySide6.QtSvg import QSvgRenderer  # QtSvg loaded only once an SVG was written

        box = QSvgRenderer(str(path)).viewBox()
        return (box.width(), box.height()) if box.isValid() and not box.isEmpty() else None
    size = QImageReader(str(path)).size()
    return (size.width(), size.height()) if size.isValid() else None


def ask_attention_target(parent, layer, head, raw: bool = False, exact: bool = False, model=None, trace=None,
                         cross: bool = False, kind: str | None = None):
    """Ask where to write an attention export (and a PNG's size, default_size for `model`, else `trace`'s):
    (path, size, theme), or None if the person cancels. `exact`: an image dialog also offers the exact matrix
    as .npy (a long head, whose image is block maxima). The name offered names the map's kind where `trace`'s
    model has more than one (figures.attention_file_name)."""
    filters = "CSV (*.csv);;NumPy (*.npy)" if raw else "PNG image (*.png);;SVG image (*.svg)"
    if exact and not raw:
        filters += ";;NumPy, exact values (*.npy)"
    suffix = "csv" if raw else "png"
    name = (attention_file_name(trace, layer, head, suffix, cross, kind) if trace is not None
            else f"attention_L{layer}_H{head}.{suffix}")
    model = model if model is not None or trace is None else trace.model
    path = ask_path(parent, "Export attention", name, filters)
    if path is None:
        return None
    size = DEFAULT_SIZE if raw or path.suffix.lower() in DATA_SUFFIXES else ask_size(
        parent, default_size(model, layer, head))
    return None if size is None else (path, size, figure_theme(parent))


def ask_and_export_attention(parent, trace, layer, head, raw: bool = False, **options) -> None:
    target = ask_attention_target(parent, layer, head, raw, trace=trace, cross=options.get("cross", False),
                                  kind=options.get("kind"))
    if target is not None:
        path, size, theme = target
        options.setdefault("text_scale", figure_text_scale(parent))
        run_reporting(parent, lambda: export_attention(trace, path, layer, head, size=size, theme=theme, **options))


def ask_and_export_frames(parent, trace, layer, head, **options) -> None:
    name = attention_file_name(trace, layer, head, "png", options.get("cross", False), options.get("kind"))
    path = ask_path(parent, "Export every step", name, "PNG frames (*.png);;SVG frames (*.svg)")
    size = ask_size(parent) if path is not None else None
    if path is not None and size is not None:
        theme = figure_theme(parent)
        options.setdefault("text_scale", figure_text_scale(parent))
        run_reporting(parent, lambda: export_frames(trace, path, layer, head, size=size, theme=theme, **options))


# A panel's picture is a screenshot by definition: the export text size is for figures drawn at an image's
# size, and a panel's labels cannot grow without laying the panel out again (its tables and texts would
# wrap or clip otherwise than on screen). A teacher wanting larger text turns Presentation on first.
AS_SHOWN_TIP = ("A picture of the panel exactly as it looks now, at its size on screen. File ▸ Export Figure "
                "Text Size is for the figures (attention maps, frames, animations), not for this picture: for "
                "larger text, turn on View ▸ Presentation first.")


def panel_picture_action(panel):
    """The default export of a panel: "Export <title> as shown on screen (PNG/SVG)…" (save_widget)."""
    action = QAction(f"Export {panel.title} as shown on screen (PNG/SVG)…", panel)
    action.setToolTip(AS_SHOWN_TIP)
    action.setStatusTip(AS_SHOWN_TIP)
    action.triggered.connect(lambda: in_front_then(panel, lambda: ask_and_save_widget(panel, panel.object_name)))
    return action


IN_FRONT_WAIT_MS, IN_FRONT_POLL_MS = 5000, 20
WORKING_WAIT_MS = 30000      # the longest an export waits for a panel's working state (a stream read) to end


def in_front_then(panel, save: Callable[[], None]) -> None:
    """`save` once `panel` is in sight and drawn. A panel whose tab lies behind another draws nothing until it is
    shown (Panel.refresh), so File ▸ Export of it saved what it drew last: another model's KV cache, a message
    of the model before. Its dock is brought in front first, and the picture taken once its drawing (in turns,
    Panel.drawing) is done, within IN_FRONT_WAIT_MS, and once it is no longer working (Panel.drawn) nor waiting
    for the answer that replaces what it shows (Panel.answer_due: the residual stream read after a model switch,
    the panel cleared meanwhile), within WORKING_WAIT_MS; a panel still working then is not saved, and the
    status bar says why."""
    in_front = lambda: panel.is_shown() and not panel.drawing      # noqa: E731
    if in_front() and not working(panel):
        save()
        return
    dock = panel.parentWidget()
    while dock is not None and not isinstance(dock, QDockWidget):
        dock = dock.parentWidget()
    if dock is not None:
        dock.show()
        dock.raise_()
    waited = [0]

    def poll() -> None:
        if (in_front() or waited[0] >= IN_FRONT_WAIT_MS) and not working(panel):
            save()
            return
        if waited[0] >= WORKING_WAIT_MS:
            say_in_status(panel, f"{getattr(panel, 'title', 'The panel')} was still working after "
                                 f"{WORKING_WAIT_MS // 1000} s: nothing exported. Export again once it has drawn.")
            return
        waited[0] += IN_FRONT_POLL_MS
        QTimer.singleShot(IN_FRONT_POLL_MS, panel, poll)
    QTimer.singleShot(0, panel, poll)


def working(panel) -> bool:
    """`panel` shows its working state (Panel.drawn) or waits for the answer that replaces what it shows
    (Panel.answer_due), not what it will draw: a picture now would be of that."""
    drawn, due = getattr(panel, "drawn", None), getattr(panel, "answer_due", None)
    return (drawn is not None and drawn().kind == "working") or (due is not None and due())


def ask_and_save_widget(widget, name: str) -> None:
    path = ask_path(widget, f"Export {getattr(widget, 'title', name)}", f"{name}.png",
                    "PNG image (*.png);;SVG image (*.svg)")
    if path is not None:
        theme = figure_theme(widget)
        run_reporting(widget, lambda: save_widget(widget, path, theme))
