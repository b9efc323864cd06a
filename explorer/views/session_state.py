"""A session as a small JSON file: what rebuilds a trace exactly. Qt-free, so that the Python API writes the
same files the app opens.

The model reference, the prompt and its ids, the sampling settings with the seed, the id
chosen after each step (`decoded`: the tokens the person saw, which the replay feeds
whatever the seed or temperature is by then), which of them the person forced, the number
of steps and the precision the trace was recorded in (`record_dtype`: float16 rounds every
recorded array, so it is another trace) are enough. A file written before `decoded` was
saved replays by sampling its steps again under its settings, as it always did; one
written before `record_dtype` was saved reads as float32, the default recording: a session
file is a value, read the same whatever the app's current setting (and the Python API
records in float32). Files are written atomically (a temporary file, then `os.replace`),
so a crash mid-write leaves the old file whole.
"""
from __future__ import annotations

import errno
import json
import os
import stat
from dataclasses import dataclass, field, fields
from pathlib import Path

from explorer.core import files
from explorer.core.errors import ExplorerError
from explorer.core.intervention import Experiment
from explorer.core.sampling_settings import Sampling
from explorer.views import session_schema, trace_views

FORMAT = "transformer-explorer-session"
VERSION = 1
RECORD_DTYPES = ("float32", "float16")   # what a trace's arrays may be recorded in (core.recording.RECORD_DTYPES)


SamplingSettings = Sampling      # the toolbar's choices are the engine's own dataclass (torch-free)


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
    decoded: tuple[int, ...] = ()        # the id chosen after each step, sampled or forced (empty: an older file)
    steps: int = 0                       # trace length in steps (prefill counts as one)
    device: str = "cpu"
    dtype: str = "float32"
    experiments: tuple[Experiment, ...] = ()   # the Experiments list, each on or off (the run is under those on)
    record_dtype: str = "float32"        # what the trace's arrays were recorded in (the replay records in it too)
    edited: bool = False                 # the editor's text was edited after the trace ran: not the trace's prompt

    def __post_init__(self):
        if self.record_dtype not in RECORD_DTYPES:
            raise SessionFileError(f"record dtype {self.record_dtype!r} is not one of {', '.join(RECORD_DTYPES)}.")
        if self.decoded and len(self.decoded) != self.steps:
            raise SessionFileError(f"{len(self.decoded)} decoded token ids for {self.steps} steps, not one per step.")

    @classmethod
    def of(cls, model: str | None, prompt: str, sampling: SamplingSettings, trace=None,
           device: str = "cpu", dtype: str = "float32", experiments: tuple = (), edited: bool = False
           ) -> "SessionState":
        """The state of a window: its model, prompt and sampling, and the trace it shows (if any), with the
        precision that trace was recorded in (read from its arrays, so the app and the API agree); `edited`: the
        prompt was edited after the trace ran (the trace shown is out of date)."""
        if trace is None or not trace.steps:
            return cls(model=model, prompt=prompt, sampling=sampling, device=device, dtype=dtype,
                       experiments=tuple(experiments))
        forced = tuple((i, int(s.chosen_id)) for i, s in enumerate(trace.steps) if s.forced)
        chosen = [s.chosen_id for s in trace.steps]
        decoded = tuple(int(i) for i in chosen) if None not in chosen else ()    # an encoder chooses none
        return cls(model=model, prompt=prompt, prompt_ids=tuple(int(i) for i in trace_views.started_ids(trace)),
                   sampling=sampling, forced=forced, decoded=decoded, steps=trace.n_steps, device=device, dtype=dtype,
                   experiments=tuple(experiments), record_dtype=record_dtype_of(trace), edited=edited)

    def to_json(self, **extra) -> str:
        """The session file's text; `extra` fields (the autosave's pid) follow the state's own."""
        body = {f.name: getattr(self, f.name) for f in fields(self)}     # asdict deep-copied 8,000 ids
        body["sampling"] = self.sampling.as_dict()
        body["prompt_ids"] = list(self.prompt_ids)
        body["forced"] = [list(pair) for pair in self.forced]
        if self.decoded:
            body["decoded"] = list(self.decoded)
        else:                               # no ids (an older state): the file says nothing, as an older file
            del body["decoded"]
        body["experiments"] = [experiment.to_json() for experiment in self.experiments]
        return json.dumps({"format": FORMAT, "version": VERSION, **body, **extra}, ensure_ascii=False, indent=1)

    @classmethod
    def from_json(cls, text: str, source: str = "session") -> "SessionState":
        """Parse and check a session file's text against the schema (session_schema); any fault is one
        SessionFileError naming `source` and the field."""
        try:
            body = json.loads(text)
        except json.JSONDecodeError as error:
            # json's own msg may end in "at" ("Unterminated string starting at"): one "at", then where
            what, where = error.msg.removesuffix(" at"), f"line {error.lineno}, column {error.colno}"
            raise SessionFileError(f"{source} is not valid JSON ({what} at {where}).") from None
        except RecursionError:
            raise SessionFileError(f"{source} is nested too deeply to be a session file.") from None
        except ValueError:                  # a number of more digits than Python converts (4,300)
            raise SessionFileError(f"{source} holds a number of thousands of digits, which no session has.") from None
        if not isinstance(body, dict) or body.get("format") != FORMAT:
            raise SessionFileError(f"{source} is not a Transformer Explorer session file.")
        try:
            return cls._from_body(body)
        except session_schema.SchemaError as error:
            raise SessionFileError(f"{source}: {error}.") from None
        except (ExplorerError, TypeError, ValueError, KeyError, RecursionError) as error:
            raise SessionFileError(f"{source} has a malformed field ({_one_line(error)}).") from None

    @classmethod
    def _from_body(cls, body: dict) -> "SessionState":
        version = session_schema.integer(body.get("version", 0), "version", high=2**31)
        if version > VERSION:
            raise session_schema.SchemaError(f"it was written by a newer version (format {version})")
        schema = session_schema
        steps = schema.integer(body.get("steps", 0), "steps", high=schema.MAX_STEPS)
        forced = schema.pairs(body.get("forced", []), "forced")
        return cls(model=schema.text(body.get("model"), "model", allow_none=True),
                   prompt=schema.text(body.get("prompt", ""), "prompt"),
                   prompt_ids=schema.integers(body.get("prompt_ids", []), "prompt_ids"),
                   sampling=SamplingSettings.from_dict(schema.sampling(body.get("sampling", {}))),
                   forced=forced, decoded=schema.decoded(body.get("decoded"), steps, forced), steps=steps,
                   device=schema.text(body.get("device", "cpu"), "device"),
                   dtype=schema.choice(body.get("dtype", "float32"), "dtype", schema.DTYPES),
                   experiments=tuple(Experiment.from_json(e) for e in schema.experiments(body.get("experiments", []))),
                   record_dtype=schema.choice(body.get("record_dtype", "float32"), "record_dtype", RECORD_DTYPES),
                   edited=schema.flag(body.get("edited", False), "edited"))


def _one_line(error: BaseException) -> str:
    message = " ".join(str(error).split())
    return message if len(message) <= 120 else message[:117] + "..."


def record_dtype_of(trace) -> str:
    """The dtype `trace`'s arrays were recorded in ("float32" or "float16"), read from its first Q."""
    layers = trace.steps[0].layers if trace.steps else ()
    attn = layers[0].attn if layers else None
    name = str(attn.q.dtype) if attn is not None else "float32"
    return name if name in RECORD_DTYPES else "float32"


def write_atomically(path: str | os.PathLike, text: str) -> None:
    """Write `text` to `path` so that a reader sees either the old file or the new one, whole (core.files),
    making its folder first: the app's own files (the autosave, the session quit in) live in a folder of its
    own that may not exist yet. A file the person names goes through `save`, which makes no folder."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise files.write_failure(path, error, "the session", SessionFileError) from None
    files.write_text_atomic(path, text, "the session", SessionFileError)


def save(path: str | os.PathLike, state: SessionState) -> None:
    """Write a session file the person named: a missing folder is refused in one sentence, as every other
    file the explorer writes for a person (Run.save, a figure's save, trace --out), not made (boundary27)."""
    files.write_text_atomic(Path(path), state.to_json(), "the session", SessionFileError)


MAX_SESSION_BYTES = 256 << 20     # an 8,000-token session is ~100 KB; more is not a session file


def load(path: str | os.PathLike) -> SessionState:
    """Read and check a session file; anything wrong with it is one SessionFileError naming it and what it is
    (missing, a link that loops or leads nowhere, a folder or a pipe, too large, unreadable, not a session)."""
    path = Path(path)
    try:
        status = path.stat()                       # links followed: a link to a session is a session
        if not stat.S_ISREG(status.st_mode):
            raise SessionFileError(f"{path} is {files.kind_of(status.st_mode)}, not a session file.")
        if status.st_size > MAX_SESSION_BYTES:
            raise SessionFileError(f"{path} is {status.st_size:,} bytes, too large to be a session file.")
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        raise SessionFileError(f"{path} is not UTF-8 text (byte {error.start}), so it is not a session.") from None
    except OSError as error:
        raise _unreadable(path, error) from None
    return SessionState.from_json(text, source=str(path))


def _unreadable(path: Path, error: OSError) -> SessionFileError:
    """The one sentence for an OS error met while reading the session file `path`."""
    if isinstance(error, FileNotFoundError):
        if path.is_symlink():
            return SessionFileError(f"{path} is a symbolic link to {os.readlink(path)}, which does not exist.")
        return SessionFileError(f"{path} does not exist.")
    if error.errno == errno.ELOOP:
        return SessionFileError(f"{path} is a symbolic link that loops, so it cannot be a session.")
    return SessionFileError(f"{path}: cannot read the session ({files.reason(error)}).")
