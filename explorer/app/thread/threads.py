"""Every thread the app starts, so that quitting can stop and join them all.

The app's threads are daemons (a window closed mid-job must not hang the process), but a daemon still
inside torch or numpy when the interpreter finalises aborts the process ("terminate called without an
active exception", exit 134): the C++ thread pools it uses are torn down under it. So each thread is
started here with a way to stop it, and `stop_all_at_quit` (run at quit before the window is deleted, and by
atexit before the interpreter finalises, while daemons still run normally) asks every one to stop and joins it.

What a thread ran (its target, and through it the Qt objects the work answers to) is let go on the GUI thread
(`release_finished`), never on the thread: a thread that dropped the last reference to a Qt object's Python side
freed it there, and PySide's disconnection of its slots raced the GUI thread (a segfault in
QMetaObject::Connection::~Connection as a grid's filling thread ended after its window closed, loaded machine).
"""
from __future__ import annotations

import atexit
import sys
import threading
import time
from typing import Callable

JOIN_S = 120.0          # how long quitting waits for work that cannot be interrupted (one torch call)

_lock = threading.Lock()
_live: dict[threading.Thread, Callable[[], None]] = {}
_finished: list = []             # the targets and stops of threads that ended, for release_finished


def start(target: Callable[[], None], name: str, stop: Callable[[], None] = lambda: None) -> threading.Thread:
    """Start `target` on a daemon thread called `name`; `stop()` asks it to end soon (set its cancel event,
    close its queue)."""
    thread = threading.Thread(target=_forgetting(target), name=name, daemon=True)
    adopt(thread, stop)
    thread.start()
    return thread


def adopt(thread: threading.Thread, stop: Callable[[], None] = lambda: None) -> None:
    """Count a thread started elsewhere (the model thread started at launch) among those joined at quit."""
    with _lock:
        _live[thread] = stop


def live() -> list[threading.Thread]:
    with _lock:
        return [thread for thread in _live if thread.is_alive()]


def stop_all(timeout_s: float | None = None) -> bool:
    """Ask every thread to stop and join each; True when all have ended within `timeout_s` (JOIN_S) in all."""
    timeout_s = JOIN_S if timeout_s is None else timeout_s     # read now: a test's child process shortens it
    with _lock:
        threads = list(_live.items())
    for _thread, stop in threads:
        try:
            stop()
        except Exception:           # noqa: BLE001 - one thread's stop must not keep the others running
            pass
    deadline = time.monotonic() + timeout_s
    for thread, _stop in threads:
        if thread is not threading.current_thread():
            thread.join(max(0.0, deadline - time.monotonic()))
    return not live()


def _forgetting(target: Callable[[], None]) -> Callable[[], None]:
    held = [target]                 # the thread's only reference, handed to _finished as it ends, with its stop

    def run() -> None:
        try:
            held[0]()
        finally:
            with _lock:
                _finished.extend((held.pop(), _live.pop(threading.current_thread(), None)))
    return run


def let_go(thing) -> None:
    """Hand `thing` (a request a thread ran, with the panel's job it holds) to release_finished, for its last
    reference to drop on the GUI thread rather than on the thread that ran it."""
    with _lock:
        _finished.append(thing)


def release_finished() -> None:
    """Let go, on this thread (the GUI's), of what the threads that ended ran."""
    with _lock:
        finished = _finished[:]
        _finished.clear()
    finished.clear()


def stop_all_at_quit() -> None:
    """At quit (launch.tear_down, and atexit for any other way out), a thread still running after JOIN_S is
    inside one call that cannot be interrupted (a whole forward pass at thousands of tokens): waiting for it is
    slow, but leaving it to the interpreter's finalisation aborts the process, so it is said and waited for."""
    if stop_all():
        return
    names = ", ".join(sorted({thread.name for thread in live()}))
    print(f"Waiting for {names} to finish before quitting.", file=sys.stderr, flush=True)
    for thread in live():
        thread.join()


atexit.register(stop_all_at_quit)
