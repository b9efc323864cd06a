"""After a crash: the question whether to restore the autosaved session (see session_file.Autosaver)."""
from __future__ import annotations

from pathlib import Path
from typing import Callable

from PySide6.QtWidgets import QMessageBox, QWidget

from explorer.app.state.session_file import SessionState, crashed_session
from explorer.app.window.model_refs import short_name


def offer_crash_restore(parent: QWidget, autosave_path: str | Path | None,
                        restore: Callable[[SessionState], None]) -> bool:
    """Asks whether to restore the session a crash left at `autosave_path`; True when restored."""
    state = crashed_session(autosave_path)
    if state is None:
        return False
    steps = f", {state.steps - 1} decoded tokens" if state.steps > 1 else ""
    answer = QMessageBox.question(
        parent, "Restore the last session?",
        f"Transformer Explorer did not close cleanly last time. Restore its session "
        f"({short_name(state.model or 'no model')}, a {len(state.prompt):,}-character prompt{steps})?")
    if answer != QMessageBox.StandardButton.Yes:
        return False
    restore(state)
    return True
