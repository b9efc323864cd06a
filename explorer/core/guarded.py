"""Calling native code that may run away or panic: a time bound, and Rust panic messages kept off stderr.

The tokenizers library releases the GIL while it encodes, so a call can run in a worker thread and be
given up on after a time bound (the thread finishes on its own; its result is dropped). A Rust panic
reaches Python as pyo3's PanicException, but the panic hook has already written its message (and, with
RUST_BACKTRACE, a backtrace) to file descriptor 2; while a call runs, that descriptor points at a
temporary file, whose text is written back to stderr unless the call panicked.
"""
from __future__ import annotations

import os
import sys
import tempfile
import threading
from contextlib import contextmanager
from typing import Callable, TypeVar

from explorer.core.errors import TokenizerError

T = TypeVar("T")
_STDERR = threading.Lock()


def bounded_call(work: Callable[[], T], seconds: float, too_long: str) -> T:
    """work() in a worker thread; TokenizerError(too_long) if it has not returned after `seconds`.

    The thread is a daemon that nobody stops or joins, on purpose: what it runs (a tokenizer's encode, in
    Rust with the GIL released) cannot be interrupted, and a call given up on may never return, so a quit
    that joined it could wait without end. It writes no file and holds no lock of the caller's, and it is
    not torch (no C++ thread pool is torn down under it), so a process that exits under it exits 0."""
    outcome: dict = {}

    def run() -> None:
        try:
            outcome["value"] = work()
        except BaseException as error:  # noqa: B036 -- handed to the caller's thread as it was
            outcome["error"] = error

    worker = threading.Thread(target=run, name="bounded-call", daemon=True)
    worker.start()
    worker.join(seconds)
    if worker.is_alive():
        raise TokenizerError(f"{too_long} (more than {seconds:.0f} s); its split pattern backtracks without end.")
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


@contextmanager
def rust_panics_off_stderr():
    """Hold what native code writes to fd 2 during the block; write it back unless the block raised."""
    if not _STDERR.acquire(timeout=0.5):      # a call given up on still holds it: no redirect this time
        yield
        return
    held, saved = None, None
    try:
        held = tempfile.TemporaryFile()
        sys.stderr.flush()
        saved = os.dup(2)
        os.dup2(held.fileno(), 2)
    except (OSError, ValueError):             # no fd 2 to redirect (a windowed app on some systems)
        saved = None
    failed = True
    try:
        yield
        failed = False
    finally:
        if saved is not None:
            os.dup2(saved, 2)
            os.close(saved)
            held.seek(0)
            written = held.read()
            if written and not failed:
                os.write(2, written)
        if held is not None:
            held.close()
        _STDERR.release()
