"""Sessions as small JSON files (session_state.py, Qt-free), and the autosave that survives a crash.

Each running window autosaves to a file of its own, `autosave-session-<pid>-<id>.json` in the
app's folder, and removes only that file on a clean exit: a second window closing never takes
the first one's autosave with it. At start, an autosave whose process is no longer running is
the session of a run that died, and the window offers to restore it. An autosave that cannot be
read (damaged, not a session, an absurd pid) is moved aside with a message and never stops a start.

A clean exit keeps the session it quit in, beside the autosave (`last-session.json`, quit_session_path): the
next launch brings its decoded steps back (crash_restore.restore_quit_session), as File ▸ Open Session does.
"""
from __future__ import annotations

import json
import os
import queue
import sys
import threading
import uuid
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QObject, QTimer, Signal

from explorer.app.thread import threads
from explorer.core import files
from explorer.core.errors import ExplorerError
from explorer.views.session_state import FORMAT, VERSION, SessionFileError, SessionState, load, save, write_atomically  # noqa: F401 (re-exported)

AUTOSAVE_PREFIX = "autosave-session"
AUTOSAVE_NAME = f"{AUTOSAVE_PREFIX}.json"      # the one shared autosave of earlier versions, still restored
QUIT_SESSION_NAME = "last-session.json"        # the session of the last clean exit (not an autosave: no pid)
SET_ASIDE_SUFFIX = ".unreadable"
MAX_PID = 2**31 - 1                             # pid_t is a signed 32-bit number; more is no process id
NOTICE_MS = 30000                               # how long the status bar tells an autosave's failure
_IN_USE: set[Path] = set()      # this process's windows' autosaves (a dead run may have had our pid)


def app_home() -> Path:
    """Where the app keeps its own files: $TRANSFORMER_EXPLORER_HOME or ~/.cache/transformer-explorer."""
    home = os.environ.get("TRANSFORMER_EXPLORER_HOME")
    return Path(home) if home else Path.home() / ".cache" / "transformer-explorer"


def default_autosave_path() -> Path:
    """A new window's own autosave: the process id (a crash is told from a running window by it) and a
    random part (two windows of one process have two files)."""
    return app_home() / f"{AUTOSAVE_PREFIX}-{os.getpid()}-{uuid.uuid4().hex[:8]}.json"


def quit_session_path(autosave: str | os.PathLike) -> Path:
    """Where a window whose autosave is `autosave` keeps the session it quit in: beside it, one for the folder
    (the last window to quit wins, as the settings' last prompt and model do)."""
    return Path(autosave).with_name(QUIT_SESSION_NAME)


def quit_session(autosave: str | os.PathLike) -> SessionState | None:
    """The session the last clean exit beside `autosave` quit in, or None (none kept, or not readable: a launch
    then opens the last model and prompt as it did before)."""
    try:
        return load(quit_session_path(autosave))
    except (OSError, ValueError, ExplorerError, RecursionError):
        return None


def is_autosave(path: Path) -> bool:
    return path.name == AUTOSAVE_NAME or (path.name.startswith(AUTOSAVE_PREFIX + "-") and path.suffix == ".json")


class Autosaver(QObject):
    """Every few seconds, writes the window's state if it changed to the window's own file; removed
    again on a clean exit.

    The file records the writer's process id, so a second window running at the
    same time does not mistake the first one's autosave for a crash. The timer takes the state on the
    GUI thread (a frozen SessionState: its fields are strings, numbers and tuples, so the write never
    sees a later edit) and hands it to a thread of its own that serialises and writes it, so an
    8,000-token session never holds up a step's repaint; `save_now()` writes at once. One write at a
    time, in order.
    """

    _written = Signal(object)               # the writing thread's problem (None: written), to the GUI thread

    def __init__(self, snapshot, path: str | os.PathLike | None = None, interval_ms: int = 3000,
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.path = Path(path) if path is not None else default_autosave_path()
        _IN_USE.add(self.path)
        self._snapshot = snapshot           # () -> SessionState | None
        self._last_written: str | None = None
        self._last_state = None             # the SessionState last written (or found to be what was)
        self.problem: str | None = None     # why the last write failed, told once (status bar and stderr)
        self._lock = threading.Lock()       # _last_written and _last_state, set by the writing thread
        self._queue: queue.Queue = queue.Queue()   # states for the writing thread, started at the first
        self._writer: threading.Thread | None = None
        self._written.connect(self._after_write)
        self._timer = QTimer(self)
        self._timer.setInterval(interval_ms)
        self._timer.timeout.connect(self._in_background)

    def start(self) -> None:
        self._timer.start()

    def save_now(self) -> bool:
        """Write the current state if it differs from the last write; True when written."""
        self.wait()
        state = self._changed()
        if state is None:
            return False
        written, problem = self._write(state)
        self._after_write(problem)
        return written

    def wait(self) -> None:
        """Until the write under way (if any) has finished."""
        self._queue.join()

    def _in_background(self) -> None:
        """The timer's turn: the state taken here, written on the writing thread (none handed while it writes:
        the next turn looks again)."""
        if self._queue.unfinished_tasks:
            return
        state = self._changed()
        if state is None:
            return
        if self._writer is None:            # one daemon thread, waiting on the queue: a thread's start waits too
            # the app's registry: joined at quit, and what it ran let go on the GUI thread (threads.py)
            self._writer = threads.start(self._write_queued, "autosave", stop=lambda: self._queue.put(None))
        self._queue.put(state)

    def _write_queued(self) -> None:
        while True:
            state = self._queue.get()
            if state is None:                   # discard(): the window closed cleanly
                self._queue.task_done()
                return
            try:
                problem = self._write(state)[1]
            except Exception as error:      # never the thread's end: wait() would wait for ever
                problem = f"The session is not autosaved: {error}"
            try:
                self._written.emit(problem)     # queued to the GUI thread, where the status bar is
            except RuntimeError:                # the window went meanwhile: no one to tell
                pass
            finally:
                self._queue.task_done()

    def _after_write(self, problem: str | None) -> None:
        if problem is None:
            self.problem = None
        else:
            self._tell(problem)

    def _changed(self) -> SessionState | None:
        state = self._snapshot()
        with self._lock:
            unchanged = state is None or state == self._last_state     # not serialised again (8,000 ids)
        return None if unchanged else state

    def _write(self, state: SessionState) -> tuple[bool, str | None]:
        """(written, why it failed or None), on either thread."""
        text = state.to_json(pid=os.getpid())
        with self._lock:
            if text == self._last_written:
                self._last_state = state
                return False, None
        try:
            write_atomically(self.path, text)
        except SessionFileError as error:   # a full disk or a folder it may not write: said once, tried again
            return False, f"The session is not autosaved: {error}"
        with self._lock:
            self._last_written, self._last_state = text, state
        return True, None

    def keep_quit_session(self) -> None:
        """Write the state now to quit_session_path, which the next launch restores, steps and all: the settings
        keep only the prompt and model, so a relaunch came back at the prefill (drive20 m18). A state with
        nothing run leaves no file (the settings' last prompt does as much); a failed write is said on stderr."""
        path = quit_session_path(self.path)
        state = self._snapshot()
        try:
            if state is None or state.steps < 1 or not state.model:
                path.unlink(missing_ok=True)
            else:
                write_atomically(path, state.to_json())
        except (OSError, SessionFileError) as error:
            print(f"The session quit in is not kept: {error}", file=sys.stderr)

    def _tell(self, problem: str) -> None:
        """Say why autosave fails, once a problem: the window's status bar, and stderr (no dialog: it is not
        the person's action that failed, and the timer tries again)."""
        if problem == self.problem:
            return
        self.problem = problem
        print(problem, file=sys.stderr)
        status = getattr(self.parent(), "statusBar", None)
        if callable(status):
            status().showMessage(problem, NOTICE_MS)

    def discard(self) -> None:
        """A clean exit: stop and remove the autosave, so the next start offers no crash restore, and keep the
        session quit in (keep_quit_session)."""
        self._timer.stop()
        self.wait()                         # a write finishing after the removal would leave a file behind
        self.keep_quit_session()
        if self._writer is not None:        # the writing thread ends with the window, not at the interpreter's exit
            self._queue.put(None)
            self._writer.join()
            self._writer = None
        _IN_USE.discard(self.path)
        try:
            self.path.unlink(missing_ok=True)
        except OSError:
            pass                            # read-only cache: the next start offers a restore, no more


@dataclass(frozen=True)
class Crashed:
    """The autosave a dead run left: where it is and what it holds."""

    path: Path
    state: SessionState


def crashed_session(path: str | os.PathLike | None = None) -> SessionState | None:
    """The session of a run that did not exit cleanly, or None (see find_crashed)."""
    found = find_crashed(path)
    return found.state if found is not None else None


def find_crashed(own: str | os.PathLike | None = None, notices: list[str] | None = None) -> Crashed | None:
    """The newest autosave whose process has died, or None.

    `own` is this window's autosave: with the name of a window's own autosave, every other autosave
    in its folder is looked at; another name (a test's, the screenshots') is looked at alone.
    Unreadable autosaves are moved aside, one sentence each appended to `notices`."""
    own = Path(own) if own is not None else None
    if own is None or is_autosave(own) and own.name != AUTOSAVE_NAME:
        folder = own.parent if own is not None else app_home()
        candidates = [p for p in _autosaves_in(folder) if p != own]
    else:
        candidates = [own]
    found = []
    others = _IN_USE - {own}         # this window's own file, found at its start, was left by a run before it
    for path in candidates:
        state = _crashed_state(path, notices if notices is not None else [], others)
        if state is not None:
            found.append(Crashed(path, state))
    return max(found, key=lambda c: _mtime(c.path), default=None)


def _autosaves_in(folder: Path) -> list[Path]:
    try:
        return sorted(p for p in folder.glob(f"{AUTOSAVE_PREFIX}*.json") if is_autosave(p))
    except OSError:
        return []


def _crashed_state(path: Path, notices: list[str], in_use: set[Path]) -> SessionState | None:
    """The state in `path` if its writer is dead; a damaged file is moved aside (with a notice)."""
    try:
        if not path.is_file():
            return None
        state = load(path)
        pid = json.loads(path.read_text(encoding="utf-8")).get("pid")
        if pid is not None and not (isinstance(pid, int) and not isinstance(pid, bool) and 0 < pid <= MAX_PID):
            raise SessionFileError(f"{path}: field pid is {str(pid)[:20]!r}, not a process id.")
    except FileNotFoundError:
        return None                      # removed meanwhile by the window that wrote it
    except (OSError, ValueError, ExplorerError, RecursionError) as error:
        notices.append(_set_aside(path, error))
        return None
    if path in in_use or pid is not None and pid != os.getpid() and files.process_alive(pid):
        return None                      # another window, still running
    return state


def _set_aside(path: Path, error: BaseException) -> str:
    """Rename an unreadable autosave so that no start reads it again; the sentence that says so."""
    aside = path.with_name(path.name + SET_ASIDE_SUFFIX)
    why = " ".join(str(error).split())[:200].rstrip(".")
    try:
        os.replace(path, aside)
    except OSError:
        return f"An autosaved session could not be read and could not be moved aside ({why})."
    return f"An autosaved session could not be read, so it was moved to {aside} ({why})."


def forget(path: str | os.PathLike) -> None:
    """Remove a dead run's autosave once its question was answered (restored, it is autosaved anew)."""
    try:
        Path(path).unlink(missing_ok=True)
    except OSError:
        pass


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0

