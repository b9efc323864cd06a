"""The app's own costs on a real model (issue 3), as one JSON object. Not a test: numbers, not verdicts.

    .venv/bin/python bench/bench_app.py [--model smollm2-135m] [--steps 8] [--grid-tokens 512] [--cold-runs 2]
                                        [--paste-chars 100000]
                                        [--only step|grid|cold|paste|long-step|long-views|short-after-long ...]
                                        [--long-tokens 8000] [--heads 6] [--repeats 3] [--profile PATH]

- step_to_repaint: press Step -> every visible panel repainted, minus the model's own step time
  (StepRecord.ms). Target <= 50 ms. The window is the default layout at 1600x1000. `beyond_model_ms`
  ends when Qt has painted the dirty regions; `beyond_model_full_repaint_ms` adds a forced repaint of
  the whole window, an upper bound.
- full_grid: the attention panel's grid of every layer x head (30 x 9 for SmolLM2) at 512 tokens,
  downsampled from the trace and painted, with the reduced-row cache cold and after one more step.
  Target <= 150 ms.
- big_paste: paste --paste-chars characters (100,000) over the prompt; the time until the token table lists
  every token, and the longest the window stopped answering (the longest gap of a 5 ms timer).
- cold_start: a new process, launch -> window shown -> default model loaded -> prompt prefilled.
  Target <= 4 s to the loaded model. `process_cpu_s` is the CPU the whole process used (all threads);
  `<milestone>_cpu_s` the CPU it had used by that milestone (the GIL makes most of it serial).
- long_views: at a prompt of --long-tokens tokens (8,000; run from the prompt box unless long_step ran it) in the
  window at 1600x1000, the attention dock shown: `head_ms`, selecting a head of another layer (--heads of them) ->
  its map painted (block maxima, computed off the GUI thread, the all-heads grid filling meanwhile), median and
  max; then `tabs`: each tab of the bottom group raised in turn, twice (`first`: the panel built and drawn for
  the first time, its jobs asked, its drawing's later parts run; `again`), as [longest freeze ms, ms until
  painted]. The freeze is the
  longest gap of a 5 ms heartbeat timer from the raise to 0.3 s after the paint: how long the window stopped
  answering. A tab is drawn when its drawing's parts and its figures' have all run (app_window.tab_drawn);
  `raised_while_the_grid_filled` names the tabs raised while the attention grid still filled on its threads.
  Targets: a head within 0.5 s; no tab switch blocks for more than 100 ms.
- long_step: the same step -> repaint at a prompt of --long-tokens tokens (8,000), run as a person runs
  it (prompt text, Run): first cancelled from the progress dialog after two layers (the time until the
  window is idle, and that it shows nothing), then whole: whether the trace memory question was asked
  under the default budget, how often the prefill reported progress and whether its dialog showed, the
  trace's bytes, then step_to_repaint and each panel's own redraw, with the attention and head-atlas docks closed (their
  all-heads views have their own figures, `--only grid`): tokens, Q/K/V, mask, KV cache, next token,
  embeddings. Target <= 100 ms beyond the model.
- short_after_long: a short prompt (5 tokens) Run from the prompt box alone, and right after a prompt of
  --long-tokens tokens whose views (the attention map's block maxima, the all-heads grid) still compute on their
  threads, --repeats times in alternating blocks: the model's own prefill ms (StepRecord.ms) and Run -> the new
  trace in the window. The views' threads wait while a person's request runs (thread.person_request).
Wall times are medians; `gui_cpu_ms` is the GUI thread's own CPU time, which a busy shared machine
inflates less than wall time. Runs offscreen unless --xcb (then $DISPLAY must be an X server). --profile PATH
writes the GUI thread's cProfile of the long steps (pstats). The window's driving is in app_window.py,
step -> repaint and the long prompt in app_steps.py.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.app_steps import (  # noqa: E402  (bench/ is found from the repository root)
    answer_questions,
    long_prompt,
    long_step,
    step_to_repaint,
)
from bench.app_window import LONG_TEXT, TIMEOUT_S, close_window, load, open_window, tab_drawn, wait  # noqa: E402


# ----- the full grid ----------------------------------------------------------------------------
def full_grid(app, window, errors, tokens: int) -> dict:
    """Prefill tokens-1, step once to `tokens` (the grid re-reduces only the new row), then redraw the
    whole grid with the reduced-row cache emptied (a new trace, or the grid opened for the first time)."""
    from explorer.views import grid as grid_module

    ids = window.controller.summary.tokenizer.encode(LONG_TEXT).ids[:tokens - 1]
    if len(ids) < tokens - 1:
        raise SystemExit(f"bench_app: the long text has only {len(ids)} tokens")
    dock, panel = window.docks["attention"], window.docks["attention"].widget()
    dock.setFloating(True)
    dock.resize(1400, 800)
    dock.raise_()
    window.worker.prefill(ids)
    wait(app, lambda: window.session.trace.n_tokens == tokens - 1 and not window.worker.busy, errors, "a long prefill")

    def repaint_grid() -> tuple[float, float]:
        cpu0, t0 = time.thread_time(), time.perf_counter()
        panel._draw_grid(panel.current_view())
        app.processEvents()
        panel.grid_view.repaint()
        return 1e3 * (time.perf_counter() - t0), 1e3 * (time.thread_time() - cpu0)

    repaint_grid()
    window.worker.step()
    wait(app, lambda: window.session.trace.n_tokens == tokens and not window.worker.busy, errors, "a step")
    after_step = repaint_grid()
    cold = []
    for _ in range(3):
        grid_module._CACHE.clear()
        cold.append(repaint_grid())
    cached = [repaint_grid() for _ in range(3)]
    model = window.session.trace.model
    dock.setFloating(False)
    return {"layers_x_heads": f"{model.n_layers}x{model.n_heads}", "tokens": window.session.trace.n_tokens,
            "cold_ms": round(statistics.median(c[0] for c in cold), 1),
            "cold_gui_cpu_ms": round(statistics.median(c[1] for c in cold), 1),
            "cached_ms": round(statistics.median(c[0] for c in cached), 1),
            "after_one_step_ms": round(after_step[0], 1), "after_one_step_gui_cpu_ms": round(after_step[1], 1),
            "tile_pixels": list(panel.mosaic.tile_shape)}


# ----- a big paste --------------------------------------------------------------------------------
def big_paste(app, window, errors, chars: int) -> dict:
    """Paste `chars` characters over the prompt and wait for the token table to list every token.
    A 5 ms heartbeat timer runs meanwhile: its longest gap is how long the window froze."""
    import numpy as np
    from PySide6.QtCore import QTimer

    text = (LONG_TEXT * (chars // len(LONG_TEXT) + 1))[:chars]
    expected = len(window.controller.summary.tokenizer.encode(text).ids)
    table = window.docks["tokens"].widget().table
    beats: list[float] = []
    heartbeat = QTimer()
    heartbeat.timeout.connect(lambda: beats.append(time.perf_counter()))
    heartbeat.start(5)
    wait(app, lambda: len(beats) > 3, errors, "the heartbeat")
    window.prompt.setFocus()
    window.prompt.selectAll()
    cpu0, t0 = time.thread_time(), time.perf_counter()
    beats.append(t0)
    window.prompt.insertPlainText(text)         # what Ctrl+V does with the clipboard's text
    inserted = time.perf_counter()
    wait(app, lambda: table.rowCount() == expected and window.session.tokens is not None
         and len(window.session.tokens.source) == chars, errors, "the token table")
    filled, cpu1 = time.perf_counter(), time.thread_time()
    settle_until = filled + 0.5                  # the paints that follow
    wait(app, lambda: time.perf_counter() > settle_until, errors, "the paints")
    heartbeat.stop()
    gaps = np.diff([b for b in beats if b >= t0])
    return {"chars": chars, "tokens": expected, "insert_ms": round(1e3 * (inserted - t0), 1),
            "paste_to_table_ms": round(1e3 * (filled - t0), 1), "gui_cpu_ms": round(1e3 * (cpu1 - cpu0), 1),
            "longest_freeze_ms": round(1e3 * float(gaps.max()), 1) if len(gaps) else None}


# ----- a head and the tabs at a long prompt ---------------------------------------------------------
class Heartbeat:
    """A 5 ms timer on the GUI thread: the longest gap between its beats in a time span is how long the
    window stopped answering then."""

    def __init__(self) -> None:
        from PySide6.QtCore import QTimer

        self.beats: list[float] = []
        self.timer = QTimer()
        self.timer.timeout.connect(lambda: self.beats.append(time.perf_counter()))
        self.timer.start(5)

    def longest_gap_ms(self, start: float, end: float) -> float:
        import numpy as np

        inside = [start] + [b for b in self.beats if start <= b <= end] + [end]
        return round(1e3 * float(np.diff(inside).max()), 1)


def run_long_prompt(app, window, errors, tokens: int) -> None:
    """The prompt of `tokens` tokens run from the prompt box, unless the trace already holds it."""
    trace = window.session.trace
    if trace is not None and trace.n_tokens >= tokens - 2:
        return
    answer_questions(window)
    window.prompt.set_text(long_prompt(window.controller.summary.tokenizer, tokens))
    window.controller.run()
    wait(app, lambda: (window.session.trace is not None and window.session.trace.n_tokens >= tokens - 2
                       and not window.worker.busy), errors, "the long prefill")


def shown(panel, layer: int, head: int) -> bool:
    """The attention panel draws this head: at once for a short map, once its block maxima are painted for a
    long one (long_head)."""
    drawn, long_head = panel._drawn_large, panel.long_head
    painted = long_head.painted
    return drawn is not None and drawn[:2] == (layer, head) and (
        not long_head.active or (painted is not None and (painted.layer, painted.heads) == (layer, (head,))))


def head_shown_ms(app, window, errors, heads: int, beat: Heartbeat) -> dict:
    """Select heads of layers spread over the model: the time until the attention panel painted each map."""
    dock = window.docks["attention"]
    dock.show()
    dock.raise_()
    panel = dock.widget()
    wait(app, panel.is_shown, errors, "the attention panel")
    model = window.session.trace.model
    picks = [(round(i * (model.n_layers - 1) / max(heads - 1, 1)), (3 * i + 1) % model.n_heads) for i in range(heads)]
    times, freezes = [], []
    for layer, head in picks:
        t0 = time.perf_counter()
        window.session.select(layer=layer, head=head)
        wait(app, lambda: shown(panel, layer, head), errors, f"head {layer}.{head}")
        app.processEvents()
        panel.repaint()
        t1 = time.perf_counter()
        times.append(1e3 * (t1 - t0))
        freezes.append(beat.longest_gap_ms(t0, t1))
    return {"heads": [f"L{layer}.H{head}" for layer, head in picks], "each_ms": [round(t) for t in times],
            "median_ms": round(statistics.median(times), 1), "max_ms": round(max(times), 1),
            "longest_freeze_ms": max(freezes)}


def tab_switches(app, window, errors, beat: Heartbeat) -> dict:
    """Raise each tab of the bottom group in turn, twice: [longest freeze, until painted] in ms per tab."""
    front = window.docks["embeddings"]
    group = [front] + window.tabifiedDockWidgets(front)
    names = {dock: name for name, dock in window.docks.items()}
    filler = window.docks["attention"].widget().filler      # the all-heads grid, filled on two threads
    result, filling = {}, {}
    for run in ("first", "again"):
        result[run], filling[run] = {}, []
        for dock in group:
            if filler.running:
                filling[run].append(names[dock])
            t0 = time.perf_counter()
            dock.raise_()
            wait(app, lambda: tab_drawn(dock), errors, f"the {names[dock]} tab")      # its drawing's parts all run
            app.processEvents()
            dock.widget().repaint()
            painted = time.perf_counter()
            calm = painted + 0.3
            wait(app, lambda: time.perf_counter() > calm, errors, "the paints after a raise")
            result[run][names[dock]] = [beat.longest_gap_ms(t0, calm), round(1e3 * (painted - t0), 1)]
    result["longest_freeze_ms"] = max(v[0] for run in ("first", "again") for v in result[run].values())
    result["raised_while_the_grid_filled"] = filling
    return result


def long_views(app, window, errors, tokens: int, heads: int) -> dict:
    run_long_prompt(app, window, errors, tokens)
    beat = Heartbeat()
    result = {"tokens": window.session.trace.n_tokens, "head": head_shown_ms(app, window, errors, heads, beat),
              "tabs": tab_switches(app, window, errors, beat)}
    beat.timer.stop()
    return result


# ----- a short Run right after a long one ------------------------------------------------------------
SHORT_PROMPTS = ("The capital of France is", "Once upon a time")


def _run_short(app, window, errors, text: str) -> tuple[float, float]:
    """Run `text` from the prompt box: (the model's own prefill ms, Run -> the new trace in the window ms)."""
    before = window.session.trace
    window.prompt.set_text(text)
    t0 = time.perf_counter()
    window.controller.run()
    wait(app, lambda: window.session.trace is not before and window.session.trace is not None
         and not window.worker.busy, errors, "the short run")
    return window.session.trace.steps[0].ms, 1e3 * (time.perf_counter() - t0)


def short_after_long(app, window, errors, tokens: int, repeats: int) -> dict:
    """A short prompt Run alone (after another short one), then right after a prompt of `tokens` tokens, while that
    trace's views (the attention map's block maxima, the all-heads grid) still compute on their threads: the model's
    own prefill ms and Run -> trace ms of each, in blocks that alternate."""
    window.docks["attention"].show()
    window.docks["attention"].raise_()
    alone, after = {"model_ms": [], "run_ms": []}, {"model_ms": [], "run_ms": [], "grid_filling": []}
    filler = window.docks["attention"].widget().filler
    for _ in range(repeats):
        for text in SHORT_PROMPTS:
            model_ms, run_ms = _run_short(app, window, errors, text)
            alone["model_ms"].append(round(model_ms, 1))
            alone["run_ms"].append(round(run_ms, 1))
        run_long_prompt(app, window, errors, tokens)
        calm = time.perf_counter() + 0.3                     # the long trace's views under way
        wait(app, lambda: time.perf_counter() > calm, errors, "the long trace's views to start")
        after["grid_filling"].append(filler.running)
        model_ms, run_ms = _run_short(app, window, errors, SHORT_PROMPTS[0])
        after["model_ms"].append(round(model_ms, 1))
        after["run_ms"].append(round(run_ms, 1))
    summary = {name: {key: statistics.median(values) for key, values in side.items() if key != "grid_filling"}
               for name, side in (("alone", alone), ("after_long", after))}
    return {"tokens": tokens, "alone": alone, "after_long": after, "median": summary}


# ----- cold start -----------------------------------------------------------------------------------
def cold_start_child(model: str) -> int:
    """Run in a fresh process: print wall-clock times (time.time) of the milestones as JSON, and the CPU time
    the process (all threads) had used by each, which a busy shared machine inflates less."""
    from explorer.app.thread import preload

    preload.start()                                  # as the command line does before it imports the app
    marks, cpu = {}, {}
    with tempfile.TemporaryDirectory() as scratch:
        app, window, errors = open_window(model, Path(scratch))
        from explorer.app.window import model_refs

        # As launch() does: the model is opened before the event loop first runs.
        window.prompt.set_text(model_refs.default_prompt(model))
        window.open_model(model)
        app.processEvents()
        marks["window_shown"], cpu["window_shown"] = time.time(), time.process_time()
        wait(app, lambda: window.controller.summary is not None, errors, "the model")
        marks["model_loaded"], cpu["model_loaded"] = time.time(), time.process_time()
        wait(app, lambda: window.session.trace is not None and not window.worker.busy, errors, "the prefill")
        app.processEvents()
        window.repaint()
        marks["prefilled_and_painted"], cpu["prefilled_and_painted"] = time.time(), time.process_time()
        close_window(app, window)
    print(json.dumps({"marks": marks, "cpu": cpu}))
    return 0


def cold_start(model: str, runs: int, xcb: bool) -> list[dict]:
    # The project's bytecode, as `make run` compiles it (and a wheel install would have it).
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(Path(__file__).resolve().parents[1] / "explorer")],
                   capture_output=True, check=False)
    env = dict(os.environ, QT_QPA_PLATFORM="xcb" if xcb else "offscreen", TRANSFORMER_EXPLORER_NO_RESTORE="1")
    results = []
    for _ in range(runs):
        start, cpu_before = time.time(), resource.getrusage(resource.RUSAGE_CHILDREN)
        done = subprocess.run([sys.executable, __file__, "--cold-start-child", "--model", model], env=env,
                              capture_output=True, text=True, timeout=TIMEOUT_S)
        if done.returncode != 0:
            raise SystemExit(f"bench_app: the cold-start run failed: {done.stderr.strip()[-500:]}")
        child = json.loads(done.stdout.strip().splitlines()[-1])
        results.append({name: round(at - start, 2) for name, at in child["marks"].items()})
        results[-1].update({f"{name}_cpu_s": round(used, 2) for name, used in child["cpu"].items()})
        cpu = resource.getrusage(resource.RUSAGE_CHILDREN)
        results[-1]["process_cpu_s"] = round(cpu.ru_utime + cpu.ru_stime - cpu_before.ru_utime - cpu_before.ru_stime, 2)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--grid-tokens", type=int, default=512)
    parser.add_argument("--cold-runs", type=int, default=2)
    parser.add_argument("--paste-chars", type=int, default=100_000)
    parser.add_argument("--long-tokens", type=int, default=8000)
    parser.add_argument("--heads", type=int, default=6, help="heads selected by --only long-views")
    parser.add_argument("--only", choices=["step", "grid", "cold", "paste", "long-step", "long-views",
                                           "short-after-long"],
                        action="append")
    parser.add_argument("--repeats", type=int, default=3, help="long prompts run by --only short-after-long")
    parser.add_argument("--profile", metavar="PATH", help="write the GUI thread's cProfile of the long steps here")
    parser.add_argument("--xcb", action="store_true", help="use the X server in $DISPLAY instead of offscreen")
    parser.add_argument("--cold-start-child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    os.environ.setdefault("QT_QPA_PLATFORM", "xcb" if args.xcb else "offscreen")
    if args.cold_start_child:
        return cold_start_child(args.model)
    only = set(args.only or ["step", "grid", "cold", "paste"])
    report = {"model": args.model, "cpus": os.cpu_count(), "load_average": os.getloadavg()}
    if "cold" in only:
        report["cold_start_s"] = cold_start(args.model, args.cold_runs, args.xcb)
    if only & {"step", "grid", "paste", "long-step", "long-views", "short-after-long"}:
        with tempfile.TemporaryDirectory() as scratch:
            app, window, errors = open_window(args.model, Path(scratch))
            load(app, window, errors, args.model, None)
            if "step" in only:
                report["step_to_repaint"] = step_to_repaint(app, window, errors, args.steps)
            if "grid" in only:
                report["full_grid"] = full_grid(app, window, errors, args.grid_tokens)
            if "paste" in only:
                report["big_paste"] = big_paste(app, window, errors, args.paste_chars)
            if "long-step" in only:
                report["long_step"] = long_step(app, window, errors, args.long_tokens, args.steps,
                                                 args.profile)
            if "long-views" in only:
                report["long_views"] = long_views(app, window, errors, args.long_tokens, args.heads)
            if "short-after-long" in only:
                report["short_after_long"] = short_after_long(app, window, errors, args.long_tokens, args.repeats)
            close_window(app, window)
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
