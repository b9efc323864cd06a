"""Opening an untrusted model file: only a regular file is opened, and every OS failure is one sentence.

A FIFO named `model.safetensors` would block `open()` forever and a device would stream without end,
so the path is checked with os.stat first and opened with O_NONBLOCK (an open of a FIFO swapped in
after the check then returns at once), and the opened descriptor is checked again with fstat.
Torch- and numpy-free.
"""
from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import BinaryIO

from explorer.core.errors import ModelLoadError

_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def unreadable(path: Path, error: OSError) -> ModelLoadError:
    """The one sentence for an OS error met while reading `path` (permission, I/O, a vanished file)."""
    if isinstance(error, PermissionError):
        return ModelLoadError(f"{path} cannot be read: permission denied.")
    if isinstance(error, FileNotFoundError):
        return ModelLoadError(f"{path} does not exist.")
    return ModelLoadError(f"{path} cannot be read ({error.strerror or error}).")


def regular_size(path: Path) -> int:
    """The size of `path` if it is a regular file (links followed); ModelLoadError naming what it is otherwise."""
    try:
        status = os.stat(path)
    except OSError as error:
        raise unreadable(path, error) from None
    if not stat.S_ISREG(status.st_mode):
        raise ModelLoadError(f"{path} is {_kind(status.st_mode)}, not a regular file; it was not opened.")
    return status.st_size


def is_regular(path: Path) -> bool:
    """Whether `path` is a regular file (links followed), without raising."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def open_regular(path: Path) -> BinaryIO:
    """`path` opened for binary reading, refused unless it is (still, after opening) a regular file."""
    regular_size(path)
    try:
        descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    except OSError as error:
        raise unreadable(path, error) from None
    mode = os.fstat(descriptor).st_mode
    if not stat.S_ISREG(mode):
        os.close(descriptor)
        raise ModelLoadError(f"{path} is {_kind(mode)}, not a regular file; it was not opened.")
    return os.fdopen(descriptor, "rb")


def read_bytes(path: Path, limit: int, what: str) -> bytes:
    """The whole of a regular file of at most `limit` bytes (a size past it is refused unread)."""
    size = regular_size(path)
    if size > limit:
        raise ModelLoadError(f"{path} is {size:,} bytes, far more than any {what} holds; it was not read.")
    try:
        with open_regular(path) as handle:
            return handle.read(limit + 1)
    except OSError as error:
        raise unreadable(path, error) from None
