"""The test run's own home: a temporary HOME, config, cache and model store, and a check that the
user's were left alone.

`isolate()` runs before any test module is imported (from tests/conftest.py). It records
fingerprints of the user's store and settings files, then points the environment into a
temporary folder. Pulled real models are copied in file by file, so the `realmodel` tests find them
without the run writing next to the pulled files: a first load in the run writes the float32 copy of a
GGUF into the run's store, and later loads map it (a GGUF linked in from elsewhere is never given a copy,
so every load of Gemma 3 dequantized it again: 85% of a load, about 15 s). `changed_user_files()` compares the
fingerprints again at the end of the run.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

PULLED_FILE = "pulled.json"      # explorer.core.store.PULLED_FILE, not imported so that no package loads this early
MODELS_ENV = "TRANSFORMER_EXPLORER_TEST_MODELS"
HASHED_UP_TO = 1 << 20           # bigger files (model weights) are compared by size and mtime
# What the person's own window, if it runs beside the tests, writes every few seconds (explorer.app.state.session_file).
LIVE_FILE = "autosave-session.json"        # and its temporary ".autosave-session.json.*.tmp" while it is written


@dataclass(frozen=True)
class Isolation:
    root: Path                       # the run's temporary folder
    user_roots: tuple[Path, ...]     # the user's store and settings folders
    before: dict[str, str]           # path -> fingerprint, taken before the first test


def user_roots(environ=os.environ) -> tuple[Path, ...]:
    """The folders the app writes for this user: its store and app home, and its QSettings folder."""
    home = Path(environ.get("HOME") or Path.home())
    config = Path(environ.get("XDG_CONFIG_HOME") or home / ".config")
    roots = [home / ".cache" / "transformer-explorer", config / "transformer-explorer"]
    if environ.get("TRANSFORMER_EXPLORER_HOME"):
        roots.append(Path(environ["TRANSFORMER_EXPLORER_HOME"]).expanduser())
    return tuple(roots)


def fingerprints(roots) -> dict[str, str]:
    """path -> sha256 (small files) or size:mtime (big ones), for every file under the roots."""
    found = {}
    for root in roots:
        for path in sorted(Path(root).rglob("*")) if Path(root).is_dir() else []:
            if path.is_symlink() or not path.is_file() or LIVE_FILE in path.name:
                continue
            stat = path.stat()
            found[str(path)] = (hashlib.sha256(path.read_bytes()).hexdigest() if stat.st_size <= HASHED_UP_TO
                                else f"{stat.st_size}:{stat.st_mtime_ns}")
    return found


def model_sources(environ, roots) -> list[Path]:
    repository = Path(__file__).resolve().parents[1]
    named = environ.get(MODELS_ENV)
    return [Path(named)] if named else [repository / ".cache" / "test-models", roots[0] / "models", *roots[2:]]


def copy_models(sources: list[Path], store: Path) -> list[str]:
    """Copy every completely pulled model (a folder with pulled.json) of the first source holding it into store."""
    copied = []
    for source in sources:
        for folder in sorted(source.glob(f"*/{PULLED_FILE}")) if source.is_dir() else []:
            name = folder.parent.name
            if name in copied:
                continue
            (store / name).mkdir(parents=True)
            for file in folder.parent.iterdir():
                if file.is_file():
                    shutil.copyfile(file, store / name / file.name)
            copied.append(name)
    return copied


def isolate(environ=os.environ) -> Isolation:
    """Point HOME, XDG_* and TRANSFORMER_EXPLORER_HOME into a new temporary folder (in place, in environ)."""
    roots = user_roots(environ)
    before = fingerprints(roots)
    root = Path(tempfile.mkdtemp(prefix="explorer-tests-"))
    store = root / "store"
    store.mkdir()
    copy_models(model_sources(environ, roots), store)
    environ.update({"HOME": str(root / "home"), "XDG_CONFIG_HOME": str(root / "home" / ".config"),
                    "XDG_CACHE_HOME": str(root / "home" / ".cache"), "TRANSFORMER_EXPLORER_HOME": str(store)})
    (root / "home" / ".config").mkdir(parents=True)
    return Isolation(root=root, user_roots=roots, before=before)


def changed_user_files(isolation: Isolation) -> list[str]:
    """The user's files that were added, removed or changed since isolate()."""
    after = fingerprints(isolation.user_roots)
    return sorted(path for path in set(after) | set(isolation.before)
                  if after.get(path) != isolation.before.get(path))


def clean_up(isolation: Isolation) -> None:
    shutil.rmtree(isolation.root, ignore_errors=True)
