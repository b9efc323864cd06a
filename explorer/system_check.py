"""The system libraries Qt needs, checked the same way by `make run` (packaging/check_system.py) and by the
app's own start, so that a missing one is named with the apt-get line that installs it instead of Qt's
generic "could not load the Qt platform plugin" abort.

Standard library only: `make run` runs it with the system Python before the venv exists.
"""
from __future__ import annotations

import ctypes
import os
import shutil
import sys

# Needed to import Qt at all, even offscreen, and to draw text.
QT_IMPORT = ["libegl1", "libgl1", "libxkbcommon0", "libfontconfig1", "libfreetype6",
             "libdbus-1-3", "libglib2.0-0", "fonts-dejavu-core", "fonts-wqy-microhei"]
# Needed for a real window on X11 (Qt's xcb platform plugin).
QT_WINDOW = ["libxcb-cursor0", "libxcb-icccm4", "libxcb-keysyms1", "libxkbcommon-x11-0",
             "libxcb-image0", "libxcb-randr0", "libxcb-render-util0", "libxcb-shape0", "libxcb-xkb1"]
# The shared library each window package provides (what the xcb plugin loads).
WINDOW_LIBRARIES = {
    "libxcb-cursor0": "libxcb-cursor.so.0", "libxcb-icccm4": "libxcb-icccm.so.4",
    "libxcb-keysyms1": "libxcb-keysyms.so.1", "libxkbcommon-x11-0": "libxkbcommon-x11.so.0",
    "libxcb-image0": "libxcb-image.so.0", "libxcb-randr0": "libxcb-randr.so.0",
    "libxcb-render-util0": "libxcb-render-util.so.0", "libxcb-shape0": "libxcb-shape.so.0",
    "libxcb-xkb1": "libxcb-xkb.so.1",
}


def install_line(packages: list[str]) -> str:
    return "sudo apt-get install -y " + " ".join(packages)


def window_line(packages: list[str]) -> str:
    """The one line that names what a real window still needs (printed by `make run` and by the app)."""
    return "For a real window, also install: " + install_line(packages)


def uses_xcb(environ=os.environ) -> bool:
    """Whether Qt will open its window through X11 (xcb): on Linux, asked for, or an X display and no Wayland."""
    if not sys.platform.startswith("linux"):
        return False
    platform = environ.get("QT_QPA_PLATFORM", "")
    if platform:
        return platform.split(";")[0].startswith("xcb")
    return bool(environ.get("DISPLAY")) and not environ.get("WAYLAND_DISPLAY")


def _loads(soname: str) -> bool:
    try:
        ctypes.CDLL(soname)
    except OSError:
        return False
    return True


def missing_window_packages() -> list[str]:
    """The window packages whose library cannot be loaded (dlopen: the very test Qt's plugin does)."""
    return [package for package, soname in WINDOW_LIBRARIES.items() if not _loads(soname)]


def window_problem(environ=os.environ) -> str | None:
    """Why Qt could not open a window here, with the line that fixes it; None when nothing is missing."""
    if not uses_xcb(environ):
        return None
    missing = missing_window_packages()
    if not missing:
        return None
    if shutil.which("apt-get"):
        return "Qt cannot open a window: system libraries are missing. " + window_line(missing)
    libraries = ", ".join(WINDOW_LIBRARIES[p] for p in missing)
    return f"Qt cannot open a window: these system libraries are missing: {libraries}."
