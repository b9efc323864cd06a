"""Every file the program writes goes through `write_atomic`: a reader sees the old file or the new one, whole.

The new content is written to a temporary file beside the target (same folder, so same file
system), flushed to disk, given the mode the umask asks for (a temporary file is created 0600),
and moved onto the target with `os.replace`, which is atomic on POSIX and Windows. On any
failure, a KeyboardInterrupt included, the temporary file is removed and the target is left as it
was. A full disk, a read-only file system or a folder without write permission is reported as what
it is, in one sentence that names the target.
"""
from __future__ import annotations

import errno
import os
import shutil
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path

from explorer.core.errors import ExplorerError

TEMPORARY_SUFFIX = ".tmp"


class FileWriteError(ExplorerError):
    """A file could not be written where it was asked for."""


_REASONS = {
    errno.ENOSPC: "the disk is full",
    errno.EDQUOT: "the disk quota is exceeded",
    errno.EROFS: "the file system is read-only",
    errno.EACCES: "permission denied",
    errno.EPERM: "permission denied",
    errno.ENOENT: "its folder does not exist",
    errno.ENOTDIR: "a part of its folder is a file, not a folder",
    errno.EISDIR: "it is a folder",
    errno.ENAMETOOLONG: "the name is too long",
    errno.EFBIG: "the file would be too large for the file system",
    errno.ELOOP: "it is a symbolic link that loops",
}

_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def kind_of(mode: int) -> str:
    """What a file that is not a regular file is, from its st_mode: 'a folder', 'a named pipe (FIFO)', ..."""
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def reason(error: BaseException) -> str:
    """What an OSError means to a person, in a few words (a full disk says so, not 'cannot read')."""
    if isinstance(error, OSError) and error.errno in _REASONS:
        return _REASONS[error.errno]
    if isinstance(error, OSError) and error.strerror:
        return error.strerror[0].lower() + error.strerror[1:]
    return str(error) or type(error).__name__


def write_failure(path: str | os.PathLike, error: BaseException, what: str = "",
                  error_type: type[ExplorerError] = FileWriteError) -> ExplorerError:
    """The one-sentence error for `error` while writing `path` (what: e.g. 'the session').

    A writer that reports no errno (Qt's image writer only says it failed) on a folder with no
    space left was stopped by the full disk, and the sentence says so."""
    thing = f"{what} to {path}" if what else str(path)
    if not getattr(error, "errno", None) and _free_bytes(Path(path).parent) < FULL_DISK_BYTES:
        why = _REASONS[errno.ENOSPC]
    else:
        why = reason(error)
    failed = error_type(f"Cannot write {thing}: {why}.")
    failed.path, failed.reason = Path(path), why       # a caller that wrote a scratch file names its own target
    return failed


FULL_DISK_BYTES = 1 << 20


def _free_bytes(folder: Path) -> int:
    try:
        stats = os.statvfs(folder)
    except (OSError, AttributeError):         # no statvfs on Windows: not known to be full
        return FULL_DISK_BYTES
    return stats.f_bavail * stats.f_frsize


def umask_mode() -> int:
    """0o666 less the process umask: the mode `open()` would give a new file."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:      # Linux: read without changing it
            for line in status:
                if line.startswith("Umask:"):
                    return 0o666 & ~int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)     # elsewhere: read by setting, then put back at once
    os.umask(mask)
    return 0o666 & ~mask


def write_atomic(path: str | os.PathLike, writer: Callable[[str], object], what: str = "",
                 error_type: type[ExplorerError] = FileWriteError) -> Path:
    """Call `writer(temporary_path)` to write the content, then move it onto `path` in one step.

    The temporary path ends in the target's suffix (writers that look at it choose the same format).
    `what` names the content in the error ('the session'); `error_type` is the ExplorerError raised."""
    path = writable_target(Path(path).expanduser(), what, error_type)
    folder = path.parent
    try:
        handle, temporary = tempfile.mkstemp(dir=folder, prefix=f".{path.name}.", suffix=TEMPORARY_SUFFIX + path.suffix)
        os.close(handle)
    except OSError as error:
        raise write_failure(path, error, what, error_type) from None
    try:
        writer(temporary)
        _flush_to_disk(temporary)
        os.chmod(temporary, umask_mode())
        writable_target(path, what, error_type)     # again: a long write (an animation) gives time to change it
        os.replace(temporary, path)
    except OSError as error:
        raise write_failure(path, error, what, error_type) from None
    finally:
        _remove_quietly(temporary)          # after a replace it is gone; after any failure it must go
    return path


def check_new_folder(folder: str | os.PathLike, what: str = "",
                     error_type: type[ExplorerError] = FileWriteError) -> Path:
    """Refuse, before any slow work (a training), a folder `write_folder` would refuse: a file or a link, a folder
    that already holds files, or one whose nearest existing folder above cannot take a new one."""
    folder = Path(folder).expanduser()
    try:
        if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
            raise error_type(f"Cannot write {folder}: it is not a folder.")
        if folder.is_dir() and any(folder.iterdir()):
            raise error_type(f"Cannot write {folder}: it already holds files; choose a new or an empty folder.")
        above = folder.parent
        while not above.exists() and above != above.parent:
            above = above.parent
        if not above.is_dir() or not os.access(above, os.W_OK | os.X_OK) or not above.stat().st_mode & 0o222:
            raise error_type(f"Cannot write {folder}: {above} cannot take a new folder (it is read-only or not a "
                             "folder).")
    except OSError as error:
        raise write_failure(folder, error, what, error_type) from None
    return folder


def write_folder(folder: str | os.PathLike, writer: Callable[[Path], object], what: str = "",
                 error_type: type[ExplorerError] = FileWriteError) -> Path:
    """Call `writer(temporary_folder)` to write a folder's files (a model: config.json, its weights, its tokenizer),
    then move the folder onto `folder` in one step: it is the whole new folder or nothing, and a folder that already
    holds files is refused before any work (a training's --out silently replaced the model there, and a full disk
    left a config.json that looked like a model; boundary27). Its files get the mode the umask gives."""
    folder = check_new_folder(folder, what, error_type)
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        temporary = Path(tempfile.mkdtemp(dir=folder.parent, prefix=f".{folder.name}.", suffix=TEMPORARY_SUFFIX))
    except OSError as error:
        raise write_failure(folder, error, what, error_type) from None
    try:
        writer(temporary)
        file_mode = umask_mode()
        folder_mode = file_mode | (file_mode & 0o444) >> 2             # a folder searchable where it is readable
        for written in temporary.rglob("*"):
            if written.is_file():
                _flush_to_disk(str(written))
            os.chmod(written, folder_mode if written.is_dir() else file_mode)
        os.chmod(temporary, folder_mode)
        if folder.is_dir():
            folder.rmdir()                          # empty, as checked: the rename takes its place
        os.replace(temporary, folder)
    except OSError as error:
        raise write_failure(folder, error, what, error_type) from None
    except Exception as error:                      # a writer's own error (safetensors' on a full disk)
        if _free_bytes(folder.parent) < FULL_DISK_BYTES:
            raise write_failure(folder, error, what, error_type) from None     # which names the full disk
        raise
    finally:
        if temporary.exists():
            shutil.rmtree(temporary, ignore_errors=True)
    return folder


def writable_target(path: Path, what: str, error_type: type[ExplorerError]) -> Path:
    """The file `write_atomic` replaces: where a link points (as an editor writes, the link stays), refused in
    one sentence if it is a folder, a pipe or a device (a rename would replace the node itself), a link that
    loops, a file the person made read-only (a rename would replace it all the same), or out of reach."""
    try:
        if path.is_symlink():
            path = path.resolve(strict=True)
        status = path.stat() if os.path.lexists(path) else None
    except RuntimeError:                        # Path.resolve's word for a symbolic link that loops (3.11)
        raise error_type(f"Cannot write {path}: it is a symbolic link that loops.") from None
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise error_type(f"Cannot write {path}: it is a symbolic link that loops.") from None
        if not isinstance(error, FileNotFoundError):
            raise write_failure(path, error, what, error_type) from None
        return path.resolve() if path.is_symlink() else path       # a dangling link: create what it names
    if status is None:
        return path
    if stat.S_ISDIR(status.st_mode):
        raise error_type(f"Cannot write {path}: it is a folder.")
    if not stat.S_ISREG(status.st_mode):
        raise error_type(f"Cannot write {path}: it is not a regular file (a pipe or a device).")
    # Its mode too, not only access(): root may write any file, and replaced a read-only one (boundary27)
    if not status.st_mode & 0o222 or not os.access(path, os.W_OK):
        raise error_type(f"Cannot write {path}: it is read-only.")
    return path


def check_writable(path: str | os.PathLike, what: str = "", error_type: type[ExplorerError] = FileWriteError) -> Path:
    """Refuse, before any slow work, a target `write_atomic` would refuse: the file itself (writable_target),
    and a folder that is missing, not a folder, or not writable. Returns the path to write."""
    target = writable_target(Path(path).expanduser(), what, error_type)
    folder = target.parent
    try:
        is_folder, there = folder.is_dir(), folder.exists()
    except OSError as error:                # a folder above it that cannot be searched
        raise write_failure(target, error, what, error_type) from None
    if not there:
        raise error_type(f"Cannot write {target}: the folder {folder} does not exist.")
    if not is_folder:
        raise error_type(f"Cannot write {target}: {folder} is a file, not a folder.")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise error_type(f"Cannot write {target}: the folder {folder} is not writable.")
    return target


def write_text_atomic(path: str | os.PathLike, text: str, what: str = "",
                      error_type: type[ExplorerError] = FileWriteError) -> Path:
    """`text` as UTF-8, written atomically (see write_atomic). A lone surrogate is an error, not an orphan."""
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError as error:
        raise error_type(f"Cannot write {what + ' to ' if what else ''}{path}: the text holds a character "
                         f"that is not valid Unicode (at position {error.start}).") from None
    return write_atomic(path, lambda temporary: Path(temporary).write_bytes(data), what, error_type)


def _flush_to_disk(temporary: str) -> None:
    descriptor = os.open(temporary, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def _remove_quietly(temporary: str) -> None:
    try:
        os.unlink(temporary)
    except FileNotFoundError:
        pass
    except OSError:
        pass                # cannot remove it either (the folder turned read-only): nothing more to do


def process_alive(pid: int) -> bool:
    """Whether process `pid` may still be running (one that cannot be asked, or an absurd pid, counts as
    alive, so that its files are never taken from it)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, OSError):
        return True
    return True
