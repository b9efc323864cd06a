"""The window's side of the exports: the dialogs that ask where to write a figure and at what size,
the figure theme and text size chosen in the settings, and a panel's "as shown on screen" action.

The files themselves are written by explorer.drawing.export, which the CLI calls too.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QTimer
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QDockWidget, QFileDialog, QInputDialog

from explorer.app.figures.figure_settings import FigureSettings
from explorer.core.errors import ExplorerError
from explorer.drawing.export import (
    DATA_SUFFIXES,
    DEFAULT_SIZE,
    default_size,
    export_attention,
    export_frames,
    save_widget,
)


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
    """A save dialog that opens in, and remembers, the last export folder."""
    chosen, _ = QFileDialog.getSaveFileName(parent, title, str(Path(last_folder()) / name), filters)
    if not chosen:
        return None
    FigureSettings().last_folder = str(Path(chosen).parent)
    return Path(chosen)


def ask_size(parent, default: tuple[int, int] = DEFAULT_SIZE) -> tuple[int, int] | None:
    """Ask the pixel size of a PNG (SVG uses it as its nominal size), offering `default`."""
    text, ok = QInputDialog.getText(parent, "Image size", "Width × height in pixels:", text="{}x{}".format(*default))
    match = re.fullmatch(r"\s*(\d+)\s*[x×,\s]\s*(\d+)\s*", text or "")
    if not ok or not match:
        return None
    return max(16, int(match.group(1))), max(16, int(match.group(2)))


def run_reporting(parent, action: Callable[[], object]) -> None:
    try:
        action()
    except ExplorerError as error:
        session = getattr(parent, "session", None)
        if session is not None:
            session.report_error(str(error))
        else:
            raise


def ask_attention_target(parent, layer, head, raw: bool = False, exact: bool = False, model=None):
    """Ask where to write an attention export (and a PNG's size, default_size for `model`): (path, size,
    theme), or None if the person cancels. `exact`: an image dialog also offers the exact matrix as .npy
    (a long head, whose image is block maxima)."""
    filters = "CSV (*.csv);;NumPy (*.npy)" if raw else "PNG image (*.png);;SVG image (*.svg)"
    if exact and not raw:
        filters += ";;NumPy, exact values (*.npy)"
    name = f"attention_L{layer}_H{head}." + ("csv" if raw else "png")
    path = ask_path(parent, "Export attention", name, filters)
    if path is None:
        return None
    size = DEFAULT_SIZE if raw or path.suffix.lower() in DATA_SUFFIXES else ask_size(
        parent, default_size(model, layer, head))
    return None if size is None else (path, size, figure_theme(parent))


def ask_and_export_attention(parent, trace, layer, head, raw: bool = False, **options) -> None:
    target = ask_attention_target(parent, layer, head, raw, model=trace.model)
    if target is not None:
        path, size, theme = target
        options.setdefault("text_scale", figure_text_scale(parent))
        run_reporting(parent, lambda: export_attention(trace, path, layer, head, size=size, theme=theme, **options))


def ask_and_export_frames(parent, trace, layer, head, **options) -> None:
    path = ask_path(parent, "Export every step", f"attention_L{layer}_H{head}.png",
                    "PNG frames (*.png);;SVG frames (*.svg)")
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


def in_front_then(panel, save: Callable[[], None]) -> None:
    """`save` once `panel` is in sight and drawn. A panel whose tab lies behind another draws nothing until it is
    shown (Panel.refresh), so File ▸ Export of it saved what it drew last: another model's KV cache, a message
    of the model before. Its dock is brought in front first, and the picture taken once its drawing (in turns,
    Panel.drawing) is done, within IN_FRONT_WAIT_MS."""
    ready = lambda: panel.is_shown() and not panel.drawing      # noqa: E731
    if ready():
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
        if ready() or waited[0] >= IN_FRONT_WAIT_MS:
            save()
            return
        waited[0] += IN_FRONT_POLL_MS
        QTimer.singleShot(IN_FRONT_POLL_MS, panel, poll)
    QTimer.singleShot(0, panel, poll)


def ask_and_save_widget(widget, name: str) -> None:
    path = ask_path(widget, f"Export {getattr(widget, 'title', name)}", f"{name}.png",
                    "PNG image (*.png);;SVG image (*.svg)")
    if path is not None:
        theme = figure_theme(widget)
        run_reporting(widget, lambda: save_widget(widget, path, theme))
