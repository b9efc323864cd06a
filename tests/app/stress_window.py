"""The stress test's actions on the window as a whole, and the checks that follow every action.

Actions: open a model of another kind (the bundled MLA model and encoder-decoder, a tiny BERT, as the
stale-switch test opens them) and come back; View ▸ Reset Layout, through its menu action; a panel job
that fails with a long, many-line error (as a weight conversion failing for every weight did); a panel
job cancelled by Stop or by its own Cancel; every tab of the registry raised in turn, and Help ▸ Learn.

Checks: the window asks for no more than an emulated 1366x768 screen (screen_fit.fit_problems), and
an error's text stands nowhere but in an error line (window/error_bar.ErrorLine), which keeps it whole.
"""
from __future__ import annotations

import time

from PySide6.QtCore import QSize
from PySide6.QtWidgets import QAbstractButton, QLabel, QPlainTextEdit, QTextEdit, QWidget

from explorer.app.panels.attribution import AttributionPanel
from explorer.app.window.error_bar import ErrorLine
from explorer.core.patching import Cancelled
from tests.app.screen_fit import SCREENS, fit_problems
from tests.app.test_encdec_app import make_tiny_bert
from tests.app.test_stale_switch import BUNDLED, raised, registered_panels  # noqa: F401  (the stress test uses them)

SCREEN = SCREENS["1366x768"]
FAILURE = "The weight stress.{} could not be copied"     # what the failing job says, once per weight
FAILURE_LINES = 300                                       # as long as the conversion error that broke the layout
CANCEL_WAIT_S = 20                                        # a cancelled job that is never told gives up after this


def other_kinds(root) -> dict:
    """The models of other kinds the window switches to and back from: cheap, offline, made or bundled."""
    return {"mla": BUNDLED / "shakespeare-mla", "encdec": BUNDLED / "translate-en-zh",
            "encoder": make_tiny_bert(root / "tiny-bert")}


def menu_action(menu, text: str):
    """The action of `menu` whose text, without its & shortcut marks, is `text` (the real one, triggered)."""
    found = [a for a in menu.actions() if a.text().replace("&", "") == text]
    assert found, f"no '{text}' in the {menu.title()} menu"
    return found[0]


def reset_layout(window) -> None:
    menu_action(window.menus.view, "Reset Layout").trigger()


def learn(window):
    """Help ▸ Learn, then the Learn dock closed again (it would stay in view and redraw on every step)."""
    action = next(a for a in window.menus.help.actions() if a.text().replace("&", "").startswith("Learn"))
    action.trigger()
    return window.learn_dock


def failing_job(loaded, progress, cancel):
    raise RuntimeError("\n".join(FAILURE.format(i) for i in range(FAILURE_LINES)))


def fail_job(window):
    """A panel's job fails on the model thread; the panel, whose error line must say so, is returned."""
    panel = window.docks[AttributionPanel.object_name].widget()
    panel.asker.drop()                                    # a question of its own still running would hold it back
    assert panel.asker.ask(("stress failure", time.monotonic()), failing_job)
    return panel


def waiting_job(seen: list):
    def job(loaded, progress, cancel):
        seen.append("started")
        deadline = time.monotonic() + CANCEL_WAIT_S
        while not cancel.is_set() and time.monotonic() < deadline:
            time.sleep(0.002)
        seen.append(cancel.is_set())
        raise Cancelled("The stress job was cancelled.")
    return job


def cancel_job(window, qtbot, by_stop: bool) -> bool:
    """A panel's job is started, then cancelled by Stop or by the panel's Cancel; True when the job saw it."""
    seen: list = []
    panel = window.docks[AttributionPanel.object_name].widget()
    panel.asker.drop()
    panel.asker.ask(("stress cancel", time.monotonic()), waiting_job(seen))
    qtbot.waitUntil(lambda: bool(seen), timeout=10000)                # the job runs on the model thread
    if by_stop:
        window.actions.stop.trigger()
    else:
        panel.asker.call.cancel()
    qtbot.waitUntil(lambda: len(seen) == 2, timeout=(CANCEL_WAIT_S + 10) * 1000)
    return seen[1]


def texts_outside_error_lines(window) -> list[tuple[str, str]]:
    """(widget class, text) of every text a person can read in the window that is not in an ErrorLine."""
    found = [("status message", window.statusBar().currentMessage()), ("title", window.windowTitle())]
    for widget in window.findChildren(QWidget):
        if _in_error_line(widget):
            continue
        if isinstance(widget, (QLabel, QAbstractButton)):
            found.append((type(widget).__name__, widget.text()))
        elif isinstance(widget, (QPlainTextEdit, QTextEdit)):
            found.append((type(widget).__name__, widget.toPlainText()))
        found.append((type(widget).__name__ + " tooltip", widget.toolTip()))
    return found


def _in_error_line(widget: QWidget) -> bool:
    while widget is not None:
        if isinstance(widget, ErrorLine):
            return True
        widget = widget.parentWidget()
    return False


def error_problems(window) -> list[str]:
    """Where the failing job's text stands outside an error line."""
    marker = FAILURE.split("{}")[0]
    return [f"{kind}: {text[:80]!r}" for kind, text in texts_outside_error_lines(window) if marker in text]


def window_problems(window) -> list[str]:
    """What of the window does not fit the emulated 1366x768 screen."""
    # the window's asked sizes only: the plots' legibility depends on which docks the test has hidden
    # (the qkv plots went to 28 px tall after a hide-all-then-show-one), which a person does not do
    return fit_problems(window, QSize(SCREEN), plots=False)
