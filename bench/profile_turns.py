"""What the longest turns of the event loop ran when tabs are first raised at a long prompt (issue 22), as text.
Not a test: a profile, for finding what holds the window.

    .venv/bin/python bench/profile_turns.py [--model smollm2-135m] [--long-tokens 8000] [--tabs kv_cache,atlas]
                                            [--again] [--top 25] [--screen 1600x1000]

The window (as bench_app.py opens it) runs a prompt of --long-tokens tokens, then raises each tab of --tabs for the
first time (and, with --again, each once more after another tab) and waits until it has drawn and 0.3 s more. A
5 ms timer on the GUI thread starts a new cProfile at each beat: the profiles of the three longest spans between two
beats (the most work the event loop did in one go) are printed per raise, by cumulative time, with their wall
and GUI CPU ms. Runs offscreen.
"""
from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.app_window import SCREEN, close_window, load, open_window, tab_drawn, wait  # noqa: E402  (bench/ from the repository root)
from bench.bench_app import run_long_prompt  # noqa: E402

LONG_SPAN_S = 0.015          # a span with more GUI CPU than this is printed


class TurnProfiler:
    """A profile per span between two beats of a 5 ms timer; keeps those of more than LONG_SPAN_S of GUI CPU."""

    def __init__(self) -> None:
        from PySide6.QtCore import QTimer

        self.profile: cProfile.Profile | None = None
        self.since = (time.perf_counter(), time.thread_time())
        self.spans: list[tuple[float, float, pstats.Stats]] = []     # (wall s, GUI CPU s, profile) of long spans
        self.timer = QTimer()
        self.timer.timeout.connect(self.beat)

    def start(self) -> None:
        self.spans = []
        self.since = (time.perf_counter(), time.thread_time())
        self.profile = cProfile.Profile()
        self.profile.enable()
        self.timer.start(5)

    def beat(self) -> None:
        self.profile.disable()
        wall, cpu = time.perf_counter() - self.since[0], time.thread_time() - self.since[1]
        if cpu > LONG_SPAN_S:
            self.spans.append((wall, cpu, pstats.Stats(self.profile, stream=io.StringIO())))
        self.profile = cProfile.Profile()
        self.since = (time.perf_counter(), time.thread_time())
        self.profile.enable()

    def stop(self) -> list[tuple[float, float, pstats.Stats]]:
        """The spans of more than LONG_SPAN_S of GUI CPU, longest first."""
        self.timer.stop()
        self.profile.disable()
        return sorted(self.spans, key=lambda span: -span[1])


def raise_once(app, window, errors, name: str, top: int) -> None:
    dock = window.docks[name]
    profiler = TurnProfiler()
    profiler.start()
    dock.raise_()
    wait(app, lambda: tab_drawn(dock), errors, f"the {name} tab")
    app.processEvents()
    dock.widget().repaint()
    calm = time.perf_counter() + 0.3
    wait(app, lambda: time.perf_counter() > calm, errors, "the paints after a raise")
    spans = profiler.stop()
    print(f"===== {name}: spans of GUI CPU ms (wall ms): "
          + ", ".join(f"{1e3 * cpu:.0f} ({1e3 * wall:.0f})" for wall, cpu, _ in spans)
          + f"; load {os.getloadavg()[0]:.1f}")
    for wall, cpu, stats in spans[:3]:
        print(f"--- span of {1e3 * cpu:.1f} ms GUI CPU, {1e3 * wall:.1f} ms wall")
        stats.stream = sys.stdout
        stats.sort_stats("cumulative").print_stats(top)
    sys.stdout.flush()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--long-tokens", type=int, default=8000)
    parser.add_argument("--tabs", default="kv_cache,attribution,kv_lab")
    parser.add_argument("--again", action="store_true", help="raise each tab a second time, after the next one")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--screen", default=SCREEN, help="the offscreen screen, WxH (800x800: Qt's own)")
    args = parser.parse_args(argv)
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    tabs = args.tabs.split(",")
    with tempfile.TemporaryDirectory() as scratch:
        app, window, errors = open_window(args.model, Path(scratch), args.screen)
        load(app, window, errors, args.model, None)
        run_long_prompt(app, window, errors, args.long_tokens)
        calm = time.perf_counter() + 5.0            # the attention panel's first long map, painted meanwhile
        wait(app, lambda: time.perf_counter() > calm, errors, "the first map")
        for name in tabs:
            raise_once(app, window, errors, name, args.top)
        if args.again:
            for name in tabs[1:] + tabs[:1]:
                raise_once(app, window, errors, name, args.top)
        close_window(app, window)
    return 0


if __name__ == "__main__":
    sys.exit(main())
