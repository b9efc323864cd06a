"""View ▸ Presentation at 1366 px wide: every control of the toolbars is on screen, none behind a
toolbar's » overflow.

At 1.4 times the text size the three toolbars (model, decoding, sampling) are wider than a 1366 px
projector together, and Qt folded top-k, top-p and the seed behind the sampling bar's » button. The
toolbars now take as many rows as the window's width needs.
"""
from __future__ import annotations

import time

import pytest
from PySide6.QtWidgets import QApplication, QMessageBox, QToolBar, QToolButton

from tests.app.layout_probe import open_window
from tests.app.screen_fit import SCREENS, emulated_screen, settle

EXTENSION = "qt_toolbar_ext_button"          # the » Qt shows when a toolbar folds what does not fit


def overflowed(window) -> list[str]:
    """What of the window's toolbars a person cannot reach without the » overflow: each action (a button
    or a widget such as a spin box) not shown inside its bar, and every » that is shown."""
    hidden = []
    for bar in window.findChildren(QToolBar):
        if bar.isHidden():
            continue
        extension = bar.findChild(QToolButton, EXTENSION)
        if extension is not None and extension.isVisible():
            hidden.append(f"{bar.objectName()}'s »")
        for action in bar.actions():
            widget = bar.widgetForAction(action)
            if action.isVisible() and (widget is None or not widget.isVisible()
                                       or not bar.rect().contains(widget.geometry())):
                hidden.append(f"{bar.objectName()}: {action.text() or getattr(widget, 'objectName', str)()}")
    return hidden


def bars(window) -> str:
    """The toolbars' widths asked and given, and where their rows break, for a failure's message."""
    return ", ".join(f"{bar.objectName()} {bar.sizeHint().width()}->{bar.width()}"
                     f"{' (new row)' if window.toolBarBreak(bar) else ''}"
                     for bar in window.findChildren(QToolBar) if not bar.isHidden()) + f" in {window.width()} px"


def settled(done, seconds: float = 10.0) -> None:
    """Let the relayout run until `done()` or `seconds` pass: the toolbars take their rows over several
    turns, which a fixed 0.6 s did not always hold on a loaded machine."""
    deadline = time.monotonic() + seconds
    settle(0.6)
    while not done() and time.monotonic() < deadline:
        settle(0.1)


@pytest.fixture
def presented(qapp, tmp_path, monkeypatch):
    monkeypatch.setattr(QMessageBox, "warning", lambda *a: None)
    font = QApplication.font()
    with emulated_screen(SCREENS["1366x768"]) as available:
        window = open_window(str(tmp_path / "settings.ini"))
        settle(0.8)
        assert window.frameGeometry().width() == available.width()
        try:
            yield window
        finally:
            if window.presentation.on:
                window.presentation.set_on(False)
            window.close()
            QApplication.setFont(font)


def test_no_toolbar_control_is_behind_the_overflow_in_presentation_at_1366(presented):
    window = presented
    assert overflowed(window) == [], "before Presentation"
    window.presentation.set_on(True)
    settled(lambda: overflowed(window) == [])
    assert window.frameGeometry().width() <= 1366
    assert overflowed(window) == [], f"in View ▸ Presentation at 1366 px: {bars(window)}"
    window.presentation.set_on(False)
    settled(lambda: overflowed(window) == [])
    assert overflowed(window) == [], "after Presentation"
