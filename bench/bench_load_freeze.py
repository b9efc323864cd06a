"""How long a model's open holds every thread, the window's too: the longest waits of a heartbeat thread beside a
real load, each named by the load's progress text at the time.

    .venv/bin/python bench/bench_load_freeze.py [--model gemma3-270m] [--opens 2] [--gap-ms 80]

A pulled model (from the store or .cache/test-models) is copied into a throwaway store, so that its first open
there dequantizes it and builds its tokenizer, and later opens read the copies that first open wrote. A thread
sleeps 2 ms at a time; where it woke more than --gap-ms late, a call held Python's lock (the tokenizers library's
build, a serialization in one call). The GUI thread waits as long. Run on a quiet machine: the load average
before and after is printed, and a loaded machine doubles these.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
ROOT = Path(__file__).resolve().parents[1]


def pulled(name: str) -> Path:
    """The pulled model's folder: the test models' store of this checkout, else the person's store."""
    from explorer.core import store

    for home in (ROOT / ".cache" / "test-models", store.home()):
        if (home / name / store.PULLED_FILE).is_file():
            return home / name
    raise SystemExit(f"{name} is not pulled: run `python -m explorer pull {name}` first.")


def pulled_into(name: str, source: Path, home: Path) -> Path:
    """The pulled files of `name` (the catalog's list and pulled.json, none of the copies a load made) copied from
    `source` into the store `home`, made the store; the path the model opens from there."""
    from explorer.core import store

    (home / name).mkdir(parents=True)
    for file_name in (store.PULLED_FILE, *(file.name for file in store.PULLABLE[name].files)):
        shutil.copyfile(source / file_name, home / name / file_name)
    os.environ["TRANSFORMER_EXPLORER_HOME"] = str(home)
    return store.pulled_path(name)


class Heartbeat:
    """A thread that sleeps 2 ms at a time and keeps every wake-up later than `gap_s`."""

    def __init__(self, gap_s: float) -> None:
        self.gap_s, self.gaps, self.stopped = gap_s, [], threading.Event()
        self.start = time.perf_counter()
        self.thread = threading.Thread(target=self._beat, daemon=True)
        self.thread.start()

    def _beat(self) -> None:
        last = time.perf_counter()
        while not self.stopped.is_set():
            time.sleep(0.002)
            now = time.perf_counter()
            if now - last > self.gap_s:
                self.gaps.append((last - self.start, now - last))
            last = now

    def stop(self) -> None:
        self.stopped.set()
        self.thread.join()


def one_open(model_file: Path, gap_s: float) -> tuple[float, list[tuple[float, float, str]]]:
    """(seconds the load took, [(at, wait, what the load said then)]) of one open."""
    from explorer.core.runtime import load_model

    said: list[tuple[float, str]] = []
    beat = Heartbeat(gap_s)
    began = time.perf_counter()
    load_model(str(model_file), progress=lambda share, text="": said.append((time.perf_counter() - beat.start,
                                                                             str(text))))
    took = time.perf_counter() - began
    beat.stop()
    named = []
    for at, wait in beat.gaps:
        before = [text for when, text in said if when <= at]
        named.append((at, wait, before[-1] if before else "starting"))
    return took, named


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="gemma3-270m")
    parser.add_argument("--opens", type=int, default=2)
    parser.add_argument("--gap-ms", type=float, default=80.0)
    args = parser.parse_args()
    source = pulled(args.model)
    with tempfile.TemporaryDirectory(prefix="bench-freeze-") as scratch:
        model_file = pulled_into(args.model, source, Path(scratch) / "store")
        import torch

        torch.set_num_threads(1)
        print(f"{args.model}, load average before: {os.getloadavg()[0]:.2f}")
        for number in range(1, args.opens + 1):
            took, waits = one_open(model_file, args.gap_ms / 1000)
            print(f"open {number} ({'first' if number == 1 else 'later'}): {took:.2f} s; waits over "
                  f"{args.gap_ms:.0f} ms, longest first:")
            for at, wait, what in sorted(waits, key=lambda row: -row[1]):
                print(f"  {wait:5.2f} s at {at:6.2f} s, after {what[:80]!r}")
        print(f"load average after: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
