"""A session as a small JSON file: what rebuilds a trace exactly. Qt-free, so that the Python API writes the
same files the app opens.

Decoding is deterministic, so the model reference, the prompt and its ids, the
sampling settings with the seed, the forced tokens, the number of steps and the
precision the trace was recorded in (`record_dtype`: float16 rounds every recorded
array, so it is another trace) are enough. A file written before `record_dtype` was
saved reads as float32, the default recording: a session file is a value, read the
same whatever the app's current setting (and the Python API records in float32).
Files are written atomically (a temporary file, then `os.replace`), so a
crash mid-write leaves the old file whole.
"""
from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field, fields
from pathlib import Path

from explorer.core.errors import ExplorerError
from explorer.core.intervention import Experiment
from explorer.core.sampling_settings import Sampling
from explorer.views import trace_views

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
    steps: int = 0                       # trace length in steps (prefill counts as one)
    device: str = "cpu"
    dtype: str = "float32"
    experiments: tuple[Experiment, ...] = ()   # the Experiments list, each on or off (the run is under those on)
    record_dtype: str = "float32"        # what the trace's arrays were recorded in (the replay records in it too)

    def __post_init__(self):
        if self.record_dtype not in RECORD_DTYPES:
            raise SessionFileError(f"record dtype {self.record_dtype!r} is not one of {', '.join(RECORD_DTYPES)}.")

    @classmethod
    def of(cls, model: str | None, prompt: str, sampling: SamplingSettings, trace=None,
           device: str = "cpu", dtype: str = "float32", experiments: tuple = ()) -> "SessionState":
        """The state of a window: its model, prompt and sampling, and the trace it shows (if any), with the
        precision that trace was recorded in (read from its arrays, so the app and the API agree)."""
        if trace is None or not trace.steps:
            return cls(model=model, prompt=prompt, sampling=sampling, device=device, dtype=dtype,
                       experiments=tuple(experiments))
        forced = tuple((i, int(s.chosen_id)) for i, s in enumerate(trace.steps) if s.forced)
        return cls(model=model, prompt=prompt, prompt_ids=tuple(int(i) for i in trace_views.started_ids(trace)),
                   sampling=sampling, forced=forced, steps=trace.n_steps, device=device, dtype=dtype,
                   experiments=tuple(experiments), record_dtype=record_dtype_of(trace))

    def to_json(self) -> str:
        body = {f.name: getattr(self, f.name) for f in fields(self)}     # asdict deep-copied 8,000 ids
        body["sampling"] = self.sampling.as_dict()
        body["prompt_ids"] = list(self.prompt_ids)
        body["forced"] = [list(pair) for pair in self.forced]
        body["experiments"] = [experiment.to_json() for experiment in self.experiments]
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
                       dtype=str(body.get("dtype", "float32")),
                       experiments=tuple(Experiment.from_json(e) for e in body.get("experiments", ())),
                       record_dtype=str(body.get("record_dtype", "float32")))     # before it was saved: float32
        except SessionFileError as error:
            raise SessionFileError(f"{source}: {error}") from None
        except (TypeError, ValueError) as error:
            raise SessionFileError(f"{source} has a malformed field ({error}).") from None


def record_dtype_of(trace) -> str:
    """The dtype `trace`'s arrays were recorded in ("float32" or "float16"), read from its first Q."""
    layers = trace.steps[0].layers if trace.steps else ()
    attn = layers[0].attn if layers else None
    name = str(attn.q.dtype) if attn is not None else "float32"
    return name if name in RECORD_DTYPES else "float32"


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
