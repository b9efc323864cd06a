"""The first raise of tabs at a long prompt (issue 22: no tab switch blocks for more than 100 ms), as one JSON object.
Not a test: numbers, not verdicts.

    .venv/bin/python bench/bench_tab_raise.py [--model smollm2-135m] [--long-tokens 8000] [--tabs qkv,mask] [--again]
                                                 [--grid-done] [--screen 1600x1000]

The window (1600x1000, as bench_app.py opens it, on an offscreen screen of --screen: app_window.use_screen) runs a
prompt of --long-tokens tokens, then raises each tab of --tabs in turn for the first time and waits until its panel
has drawn (its drawing's later parts and its figures' too: app_window.tab_drawn) and 0.3 s more. Per tab: `freeze_ms`,
the longest gap of a 5 ms heartbeat timer (how long the window stopped answering, which a loaded machine stretches),
and `longest_gap_at_ms`, when it began after the raise (beside `painted_ms`: before the drawing was done, or in the
paints after it); `longest_gui_work_ms`, the longest GUI-thread CPU time between two beats (the most work the event
loop did in one go, which the load hardly stretches); `parts`, the GUI CPU ms of the dock's build turn, of the panel's
first drawing (the turn after) and of each later part (a turn of widgets.turns.Turns: the panel's drawing in parts, or
a figure built or drawn a part a turn); `gui_cpu_in_longest_gap_ms`, the GUI CPU within the longest gap between two
beats; `gui_cpu_ms`, all of the raise's GUI CPU. Runs offscreen.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.app_window import SCREEN, close_window, load, open_window, tab_drawn, wait  # noqa: E402  (bench/ from the repository root)
from bench.bench_app import run_long_prompt  # noqa: E402


def timed(log: list, what: str, method):
    """`method`, its GUI CPU ms appended to `log` as (what, ms) at each call."""
    def wrapper(self, *args):
        start = time.thread_time()
        try:
            return method(self, *args)
        finally:
            log.append((what, round(1e3 * (time.thread_time() - start), 1)))
    return wrapper


def raise_tabs(app, window, errors, tabs: list[str], again: bool = False) -> dict:
    """Each tab of `tabs` raised, and with `again` each once more after the next (as "<name> again")."""
    from PySide6.QtCore import QTimer

    from explorer.app.widgets.turns import Turns
    from explorer.app.window.panel_dock import PanelDock

    log: list = []
    Turns.step = timed(log, "part", Turns.step)                 # a part of a drawing, or of a figure's building
    PanelDock._settle_exposure = timed(log, "build", PanelDock._settle_exposure)
    if hasattr(PanelDock, "_first_drawing"):                  # the panel's first drawing, the turn after its build
        PanelDock._first_drawing = timed(log, "first drawing", PanelDock._first_drawing)
    beats: list[tuple[float, float]] = []                      # (wall, GUI CPU) at each beat
    timer = QTimer()
    timer.timeout.connect(lambda: beats.append((time.perf_counter(), time.thread_time())))
    timer.start(5)
    result = {}
    order = [(name, name) for name in tabs] + ([(name, f"{name} again") for name in tabs[1:] + tabs[:1]] if again
                                                else [])
    for name, label in order:
        dock = window.docks[name]
        log.clear()
        t0, c0 = time.perf_counter(), time.thread_time()
        dock.raise_()
        wait(app, lambda: tab_drawn(dock), errors, f"the {name} tab")
        app.processEvents()
        dock.widget().repaint()
        painted = time.perf_counter()
        calm = painted + 0.3
        wait(app, lambda: time.perf_counter() > calm, errors, "the paints after a raise")
        inside = [(t0, c0)] + [b for b in beats if t0 <= b[0] <= calm]
        walls = [t for t, _ in inside] + [calm]
        gaps = list(zip(inside, inside[1:]))
        longest = max(gaps, key=lambda gap: gap[1][0] - gap[0][0]) if gaps else None
        result[label] = {
            "freeze_ms": round(1e3 * max(b - a for a, b in zip(walls, walls[1:])), 1),
            # the GUI thread's CPU in the longest gap between two beats: far under it, the thread waited (for the
            # GIL, which the attention grid's threads hold, or for a core) rather than worked
            "gui_cpu_in_longest_gap_ms": round(1e3 * (longest[1][1] - longest[0][1]), 1) if longest else None,
            "longest_gap_at_ms": round(1e3 * (longest[0][0] - t0), 1) if longest else None,
            "longest_gui_work_ms": round(1e3 * max(b[1] - a[1] for a, b in zip(inside, inside[1:])), 1),
            "painted_ms": round(1e3 * (painted - t0), 1),
            "gui_cpu_ms": round(1e3 * (time.thread_time() - c0), 1),
            "parts": [f"{what} {ms}" for what, ms in log],
        }
    timer.stop()
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--long-tokens", type=int, default=8000)
    parser.add_argument("--tabs", default="qkv,mask", help="dock names, comma-separated, raised in this order")
    parser.add_argument("--grid-done", action="store_true",
                        help="raise the tabs once the attention grid has filled (its threads hold the GIL meanwhile)")
    parser.add_argument("--again", action="store_true", help="raise each tab a second time, after the next one")
    parser.add_argument("--screen", default=SCREEN, help="the offscreen screen, WxH (800x800: Qt's own)")
    args = parser.parse_args(argv)
    report = {"model": args.model, "cpus": os.cpu_count(), "load_average_before": os.getloadavg()}
    with tempfile.TemporaryDirectory() as scratch:
        app, window, errors = open_window(args.model, Path(scratch), args.screen)
        report["window"] = [window.width(), window.height()]
        load(app, window, errors, args.model, None)
        run_long_prompt(app, window, errors, args.long_tokens)
        report["tokens"] = window.session.trace.n_tokens
        if args.grid_done:                  # the attention grid's threads done: no other Python thread at work
            filler = window.docks["attention"].widget().filler
            wait(app, lambda: not filler.running, errors, "the attention grid")
        report["grid_filling_at_raise"] = window.docks["attention"].widget().filler.running
        report["load_average_at_raise"] = os.getloadavg()
        report["tabs"] = raise_tabs(app, window, errors, args.tabs.split(","), args.again)
        report["load_average_after"] = os.getloadavg()
        close_window(app, window)
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
