"""After a crash: the question whether to restore the autosaved session (see session_file.Autosaver).

Only an autosave whose window has died is offered; another window's, still running, is left
alone. An autosave that cannot be read was moved aside by session_file.find_crashed: the
status bar (and stderr) says so, and the start goes on.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Callable

from PySide6.QtWidgets import QMessageBox, QWidget

from explorer.app.state.session_file import SessionState, find_crashed, forget
from explorer.app.window.model_refs import short_name

NOTICE_MS = 30000


def offer_crash_restore(parent: QWidget, autosave_path: str | Path | None,
                        restore: Callable[[SessionState], None]) -> bool:
    """Asks whether to restore the session a dead run left beside `autosave_path` (this window's own
    autosave); True when restored. Answered either way, the dead run's file is removed."""
    notices: list[str] = []
    found = find_crashed(autosave_path, notices)
    _tell(parent, notices)
    if found is None:
        return False
    state = found.state
    steps = f", {state.steps - 1} decoded tokens" if state.steps > 1 else ""
    answer = QMessageBox.question(
        parent, "Restore the last session?",
        f"Transformer Explorer did not close cleanly last time. Restore its session "
        f"({short_name(state.model or 'no model')}, a {len(state.prompt):,}-character prompt{steps})?")
    if Path(found.path) != Path(autosave_path or ""):
        forget(found.path)               # restored, this window autosaves it under its own name
    if answer != QMessageBox.StandardButton.Yes:
        return False
    restore(state)
    return True


def _tell(parent: QWidget, notices: list[str]) -> None:
    for notice in notices:
        print(notice, file=sys.stderr)
    status = getattr(parent, "statusBar", None)
    if notices and callable(status):
        status().showMessage(" ".join(notices), NOTICE_MS)
