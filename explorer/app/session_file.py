"""Sessions as small JSON files, and the autosave that survives a crash.

A session file holds what rebuilds a trace exactly, because decoding is
deterministic: the model reference, the prompt and its ids, the sampling
settings with the seed, the forced tokens and the number of steps. Files are
written atomically (a temporary file, then `os.replace`), so a crash mid-write
leaves the old file whole. The autosave is removed on a clean exit; finding one
at start means the last run died, and the window offers to restore it.
"""
from __future__ import annotations

import json
import os
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

from PySide6.QtCore import QObject, QTimer

from explorer.app import trace_views
from explorer.app.core_api import SamplingSettings
from explorer.core.errors import ExplorerError

FORMAT = "transformer-explorer-session"
VERSION = 1
AUTOSAVE_NAME = "autosave-session.json"


class SessionFileError(ExplorerError):
    """A session file could not be read or written."""


@dataclass(frozen=True)
class SessionState:
    """Everything needed to reproduce what the person was looking at."""

    model: str | None = None             # catalog name or path of the model
    prompt: str = ""                     # the editor's text
    prompt_ids: tuple[int, ...] = ()     # the ids the trace was prefilled with (empty: not run)
    sampling: SamplingSettings = field(default_factory=SamplingSettings)
    forced: tuple[tuple[int, int], ...] = ()   # (step index, token id) chosen by the person
    steps: int = 0                       # trace length in steps (prefill counts as one)
    device: str = "cpu"
    dtype: str = "float32"

    @classmethod
    def of(cls, model: str | None, prompt: str, sampling: SamplingSettings, trace=None,
           device: str = "cpu", dtype: str = "float32") -> "SessionState":
        """The state of a window: its model, prompt and sampling, and the trace it shows (if any)."""
        if trace is None or not trace.steps:
            return cls(model=model, prompt=prompt, sampling=sampling, device=device, dtype=dtype)
        forced = tuple((i, int(s.chosen_id)) for i, s in enumerate(trace.steps) if s.forced)
        return cls(model=model, prompt=prompt, prompt_ids=tuple(int(i) for i in trace_views.started_ids(trace)),
                   sampling=sampling, forced=forced, steps=trace.n_steps, device=device, dtype=dtype)

    def to_json(self) -> str:
        body = asdict(self)
        body["sampling"] = self.sampling.as_dict()
        body["prompt_ids"] = list(self.prompt_ids)
        body["forced"] = [list(pair) for pair in self.forced]
        return json.dumps({"format": FORMAT, "version": VERSION, **body}, ensure_ascii=False, indent=1)

    @classmethod
    def from_json(cls, text: str, source: str = "session") -> "SessionState":
        try:
            body = json.loads(text)
        except json.JSONDecodeError as error:
            raise SessionFileError(f"{source} is not valid JSON ({error.msg} at line {error.lineno}).") from None
        if not isinstance(body, dict) or body.get("format") != FORMAT:
            raise SessionFileError(f"{source} is not a Transformer Explorer session file.")
        if int(body.get("version", 0)) > VERSION:
            raise SessionFileError(f"{source} was written by a newer version (format {body['version']}).")
        try:
            return cls(model=body.get("model"), prompt=str(body.get("prompt", "")),
                       prompt_ids=tuple(int(i) for i in body.get("prompt_ids", ())),
                       sampling=SamplingSettings.from_dict(body.get("sampling", {})),
                       forced=tuple((int(s), int(t)) for s, t in body.get("forced", ())),
                       steps=int(body.get("steps", 0)), device=str(body.get("device", "cpu")),
                       dtype=str(body.get("dtype", "float32")))
        except (TypeError, ValueError) as error:
            raise SessionFileError(f"{source} has a malformed field ({error}).") from None


def write_atomically(path: str | os.PathLike, text: str) -> None:
    """Write `text` to `path` so that a reader sees either the old file or the new one, whole."""
    path = Path(path)
    temporary = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)
    except OSError as error:
        if temporary is not None and os.path.exists(temporary):
            os.unlink(temporary)
        raise SessionFileError(f"{path}: cannot write the session ({error.strerror or error}).") from None


def save(path: str | os.PathLike, state: SessionState) -> None:
    write_atomically(path, state.to_json())


def load(path: str | os.PathLike) -> SessionState:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise SessionFileError(f"{path}: cannot read the session ({getattr(error, 'strerror', None) or error}).") \
            from None
    return SessionState.from_json(text, source=str(path))


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
        self._timer = QTimer(self)
        self._timer.setInterval(interval_ms)
        self._timer.timeout.connect(self.save_now)

    def start(self) -> None:
        self._timer.start()

    def save_now(self) -> bool:
        """Write the current state if it differs from the last write; True when written."""
        state = self._snapshot()
        if state is None:
            return False
        body = json.loads(state.to_json())
        body["pid"] = os.getpid()
        text = json.dumps(body, ensure_ascii=False, indent=1)
        if text == self._last_written:
            return False
        try:
            write_atomically(self.path, text)
        except SessionFileError:
            return False                    # an unwritable cache must not disturb the person
        self._last_written = text
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
