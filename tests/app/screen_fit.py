"""Checks any window test can run after any action: the window asks for no more than the screen, and
every plot a person can see is legible.

`emulated_screen(size)` makes the window's own idea of its screen (dock_layout.available_geometry, which
the first fit, View ▸ Reset Layout and the restore of a saved layout all read) a screen of `size`,
with no window manager to cap the window, as on a bare X screen. `fit_problems(window, size)` then
lists what does not fit, in words: the asked sizes (minimumSizeHint, sizeHint, the minimum size Qt
enforces from the layout) and the window's size against the screen, and every visible plot's ViewBox
under MIN_PLOT_PX either way.
"""
from __future__ import annotations

import time
from contextlib import contextmanager

import pytest
from PySide6.QtCore import QRect, QSize
from PySide6.QtWidgets import QApplication, QMessageBox

from tests.app.layout_probe import open_window, plot_boxes

SCREENS = {"1366x768": QSize(1366, 768), "1920x1080": QSize(1920, 1080)}
MIN_PLOT_PX = 120            # a plot smaller than this is a strip of ticks


@contextmanager
def emulated_screen(size: QSize):
    """The window lays itself out for an available screen area of `size` at (0, 0)."""
    from explorer.app.window import dock_layout

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(dock_layout, "available_geometry", lambda window: QRect(0, 0, size.width(), size.height()))
        yield QRect(0, 0, size.width(), size.height())


def settle(seconds: float = 0.3) -> None:
    """Let queued layouts and timers run (the docks are sized again once the window has its size)."""
    app = QApplication.instance()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        app.processEvents()
        time.sleep(0.01)


def steady(read, quiet_s: float = 0.5, timeout_s: float = 10.0):
    """What `read()` gives once it has not changed for `quiet_s` (at most `timeout_s`): a layout read after a fixed
    wait on a loaded machine caught one still being laid out, a dock's late placement or a job's result to come."""
    deadline, seen = time.monotonic() + timeout_s, read()
    while time.monotonic() < deadline:
        settle(quiet_s)
        now = read()
        if now == seen:
            return now
        seen = now
    return seen


def _over(what: str, asked: QSize, size: QSize) -> list[str]:
    if asked.width() > size.width() or asked.height() > size.height():
        return [f"{what} {asked.width()}x{asked.height()} exceeds the {size.width()}x{size.height()} screen"]
    return []


def fit_problems(window, size: QSize, plots: bool = True) -> list[str]:
    """What of `window` does not fit a screen of `size` (empty when all fits)."""
    problems = _over("minimumSizeHint", window.minimumSizeHint(), size)
    problems += _over("sizeHint", window.sizeHint(), size)
    problems += _over("minimum size", window.minimumSize(), size)
    problems += _over("window", window.frameGeometry().size(), size)
    if plots:
        problems += [f"{box['dock']} plot '{box['plot']}' is {box['width']}x{box['height']} px"
                     for box in plot_boxes(window) if min(box["width"], box["height"]) < MIN_PLOT_PX]
    return problems


def assert_fits(window, size: QSize, when: str = "", plots: bool = True) -> None:
    problems = fit_problems(window, size, plots)
    assert not problems, f"{when}: " + "; ".join(problems)


def open_settled(tmp_path, monkeypatch, seconds: float = 0.8):
    """The layout probe's window with a settings file of its own, settled; the warnings and notices it would
    show are kept, as texts, in window.dialogs."""
    shown = []
    for kind in ("warning", "information"):
        monkeypatch.setattr(QMessageBox, kind, lambda parent, title, text, *a: shown.append(text))
    window = open_window(str(tmp_path / "settings.ini"))
    window.dialogs = shown
    settle(seconds)
    return window
