"""The two things every way of starting the app shares: the QApplication, and waiting in its event loop.

launch.py (the window, the self-test) and screenshots.py both start from here, so neither imports the other.
"""
from __future__ import annotations

import sys
import time

from PySide6.QtGui import QIcon
from PySide6.QtWidgets import QApplication

from explorer.app.figures.figure_settings import APPLICATION, ORGANIZATION
from explorer.app.window import model_refs

SELF_TEST_TIMEOUT_S = 300.0


def make_app(argv: list[str] | None = None) -> QApplication:
    app = QApplication.instance() or QApplication(argv if argv is not None else sys.argv[:1])
    app.setOrganizationName(ORGANIZATION)
    app.setApplicationName(APPLICATION)
    app.setApplicationDisplayName("Transformer Explorer")
    app.setDesktopFileName("transformer-explorer")
    icon = model_refs.resources_dir() / "icons" / "transformer-explorer.svg"
    if icon.exists():
        app.setWindowIcon(QIcon(str(icon)))
    return app


class SelfTestFailure(Exception):
    pass


def _wait(app: QApplication, done, what: str, timeout_s: float = SELF_TEST_TIMEOUT_S) -> None:
    deadline = time.monotonic() + timeout_s
    while not done():
        if time.monotonic() > deadline:
            raise SelfTestFailure(f"timed out after {timeout_s:.0f} s waiting for {what}")
        app.processEvents()
        time.sleep(0.005)
