"""The window on a 1366x768 projector, for the app's tests: the screen, waiting for the worker to be idle, and
View ▸ Presentation switched. The window itself is tests/app/conftest.py's `projector_window` fixture."""
from __future__ import annotations

import time

from tests.app.screen_fit import SCREENS, settle

PROJECTOR = SCREENS["1366x768"]


def wait_idle(window, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while window.worker.busy and time.monotonic() < deadline:
        settle(0.05)
    settle(0.2)


def toggle_presentation(window) -> None:
    next(a for a in window.menus.view.actions() if a.text().replace("&", "").startswith("Presentation")).trigger()
    settle(0.6)
