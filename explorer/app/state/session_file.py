"""Sessions as small JSON files (session_state.py, Qt-free), and the autosave that survives a crash.

The autosave is removed on a clean exit; finding one at start means the last
run died, and the window offers to restore it.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

from PySide6.QtCore import QObject, QTimer

from explorer.app.state.session_state import (FORMAT, VERSION, SessionFileError,  # noqa: F401 (re-exported)
                                              SessionState, load, save, write_atomically)
from explorer.core.errors import ExplorerError

AUTOSAVE_NAME = "autosave-session.json"


def app_home() -> Path:
    """Where the app keeps its own files: $TRANSFORMER_EXPLORER_HOME or ~/.cache/transformer-explorer."""
    home = os.environ.get("TRANSFORMER_EXPLORER_HOME")
    return Path(home) if home else Path.home() / ".cache" / "transformer-explorer"


def default_autosave_path() -> Path:
    return app_home() / AUTOSAVE_NAME


class Autosaver(QObject):
    """Every few seconds, writes the window's state if it changed; removed again on a clean exit.

    The file records the writer's process id, so a second window running at the
    same time does not mistake the first one's autosave for a crash.
    """

    def __init__(self, snapshot, path: str | os.PathLike | None = None, interval_ms: int = 3000,
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.path = Path(path) if path is not None else default_autosave_path()
        self._snapshot = snapshot           # () -> SessionState | None
        self._last_written: str | None = None
        self._last_state = None             # the SessionState last looked at
        self._timer = QTimer(self)
        self._timer.setInterval(interval_ms)
        self._timer.timeout.connect(self.save_now)

    def start(self) -> None:
        self._timer.start()

    def save_now(self) -> bool:
        """Write the current state if it differs from the last write; True when written."""
        state = self._snapshot()
        if state is None or state == self._last_state:     # unchanged: not serialised again (8,000 ids)
            return False
        body = json.loads(state.to_json())
        body["pid"] = os.getpid()
        text = json.dumps(body, ensure_ascii=False, indent=1)
        if text == self._last_written:
            self._last_state = state
            return False
        try:
            write_atomically(self.path, text)
        except SessionFileError:
            return False                    # an unwritable cache must not disturb the person
        self._last_written, self._last_state = text, state
        return True

    def discard(self) -> None:
        """A clean exit: stop and remove the autosave, so the next start offers nothing."""
        self._timer.stop()
        try:
            self.path.unlink(missing_ok=True)
        except OSError:
            pass                            # read-only cache: the next start offers a restore, no more


def crashed_session(path: str | os.PathLike | None = None) -> SessionState | None:
    """The autosave of a run that did not exit cleanly, or None (none, unreadable, or still running)."""
    path = Path(path) if path is not None else default_autosave_path()
    if not path.exists():
        return None
    try:
        text = path.read_text(encoding="utf-8")
        pid = json.loads(text).get("pid")
        if isinstance(pid, int) and pid != os.getpid() and _alive(pid):
            return None
        return SessionState.from_json(text, source=str(path))
    except (OSError, ValueError, ExplorerError):
        return None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
