"""Every thread the app starts outside the model thread ends with a quit: the pull dialog's pull and the read
ahead of a GGUF's float32 copy are on the app's registry (threads.start), so quitting asks each to stop and
joins it, and the app exits 0 promptly with nothing left in the store; a tokenizer call given up on
(guarded.bounded_call) is a daemon on purpose, so a quit never waits for it.

Before, the pull and the read ahead ran on threads of their own that nobody stopped: a quit mid-pull left
the pull's temporary files in the store, and the read ahead ran on after the window had gone."""
from __future__ import annotations

import re

from tests.app.quit_child import assert_clean_exit, run_child
from tests.core.test_gguf_cache import write_gguf

PULL_STEPS = """
    import shutil
    from explorer.app.window import pull_dialog
    from explorer.core import store

    written = threading.Event()

    def endless_pull(entry, say, progress, cancelled):     # explorer pull's contract: a temporary folder in the
        work = store.home() / f".pull-{entry.name}"          # store, polled for cancel between blocks, removed
        work.mkdir(parents=True)
        try:
            with open(work / "model.safetensors", "wb") as out:
                while not cancelled():
                    out.write(bytes(1 << 16))
                    progress(0.5, "Downloading")
                    written.set()
            raise pull_dialog.pulling.PullCancelled("the pull was cancelled.")
        finally:
            shutil.rmtree(work)

    pull_dialog.PULL = endless_pull
    model_thread_waiting()
    job = pull_dialog.PullJob(next(iter(store.PULLABLE)), window)
    job.start()
    settle(written.is_set)
    asked = time.monotonic()
    quit_app()
    print("live after the tear-down:", [thread.name for thread in threads.live()], flush=True)
    print(f"joined: {threads.stop_all(10.0)} in {time.monotonic() - asked:.3f} s", threads.live(), flush=True)
    print("left in the store:", sorted(path.name for path in store.home().iterdir()), flush=True)
"""

PREFETCH_STEPS = """
    from explorer.core.loaders import gguf_copy, open_checkpoint

    model_thread_waiting()
    open_checkpoint(Path(model))                    # writes the float32 copy beside the store's GGUF
    reading = threading.Event()
    read_into = gguf_copy._read_into

    def slow_read_into(handle, target, wanted, stopped):     # gigabytes from a cold disk: still reading at quit
        reading.set()
        while not stopped():
            time.sleep(0.005)
        return read_into(handle, target, wanted, stopped)

    gguf_copy._read_into = slow_read_into
    window.worker._core.prefetch(model)             # what a load asks from the GUI thread (core_api._real_prefetch)
    settle(reading.is_set)
    asked = time.monotonic()
    quit_app()
    print(f"joined: {threads.stop_all(10.0)} in {time.monotonic() - asked:.3f} s", threads.live(), flush=True)
    print("reading on:", [t.name for t in threading.enumerate() if t.name == "model-prefetch"], flush=True)
"""

BOUNDED_STEPS = """
    from explorer.core.errors import TokenizerError
    from explorer.core.guarded import bounded_call

    model_thread_waiting()
    never = threading.Event()
    try:
        bounded_call(never.wait, 0.2, "the prompt took too long to tokenize")   # given up on; it never returns
    except TokenizerError:
        print("given up", flush=True)
    asked = time.monotonic()
    quit_app()
    print(f"joined: {threads.stop_all(10.0)} in {time.monotonic() - asked:.3f} s", threads.live(), flush=True)
"""


def joined(done) -> float:
    """The seconds quitting took to stop and join every registered thread (the child says True in ... s)."""
    found = re.search(r"^joined: True in ([0-9.]+) s \[\]$", done.stdout, re.MULTILINE)
    assert found, done.stdout + done.stderr[-2000:]
    return float(found.group(1))


def test_a_quit_mid_pull_stops_it_and_leaves_nothing_in_the_store(tmp_path):
    done = run_child(tmp_path, PULL_STEPS, join_s=10.0, timeout_s=300)
    assert_clean_exit(done)
    assert joined(done) < 10.0
    assert "left in the store: []" in done.stdout.splitlines(), done.stdout
    # stopped and joined before the window was deleted: its progress emitted while the window was deleted on
    # the GUI thread crashed a fresh-clone run with SIGSEGV and no word
    assert "live after the tear-down: []" in done.stdout.splitlines(), done.stdout


def test_a_quit_during_a_read_ahead_stops_and_joins_it(tmp_path):
    path = write_gguf(tmp_path / "store" / "tiny" / "tiny.gguf", tmp_path)
    done = run_child(tmp_path, PREFETCH_STEPS, str(path), join_s=10.0, timeout_s=300)
    assert_clean_exit(done)
    assert joined(done) < 10.0
    assert "reading on: []" in done.stdout.splitlines(), done.stdout


def test_a_quit_after_a_tokenizer_call_was_given_up_on_does_not_wait_for_it(tmp_path):
    done = run_child(tmp_path, BOUNDED_STEPS, join_s=10.0, timeout_s=300)
    assert_clean_exit(done)
    assert "given up" in done.stdout and joined(done) < 10.0
    assert "Waiting for" not in done.stderr, done.stderr[-2000:]
