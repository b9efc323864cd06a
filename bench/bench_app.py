"""The app's own costs on a real model (issue 3), as one JSON object. Not a test: numbers, not verdicts.

    .venv/bin/python bench/bench_app.py [--model smollm2-135m] [--steps 8] [--grid-tokens 512] [--cold-runs 2]
                                        [--paste-chars 100000] [--only step|grid|cold|paste|long-step ...]
                                        [--long-tokens 8000]

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
- long_step: the same step -> repaint at a prompt of --long-tokens tokens (8,000), run as a person runs
  it (prompt text, Run): first cancelled from the progress dialog after two layers (the time until the
  window is idle, and that it shows nothing), then whole: whether the trace memory question was asked
  under the default budget, how often the prefill reported progress and whether its dialog showed, the trace's bytes, then
  step_to_repaint and each panel's own redraw, with the attention and head-atlas docks closed (their
  all-heads views have their own figures, `--only grid`): tokens, Q/K/V, mask, KV cache, next token,
  embeddings. Target <= 100 ms beyond the model.
Wall times are medians; `gui_cpu_ms` is the GUI thread's own CPU time, which a busy shared machine
inflates less than wall time. Runs offscreen unless --xcb (then $DISPLAY must be an X server).
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

WINDOW_SIZE = (1600, 1000)
TIMEOUT_S = 600.0
CHECK_MS = 5
LONG_SKIP = ("attention", "atlas")      # closed at long context: measured by --only grid and their own benchmarks
LONG_TEXT = ("To be, or not to be, that is the question: Whether 'tis nobler in the mind to suffer "
             "The slings and arrows of outrageous fortune, Or to take arms against a sea of troubles "
             "And by opposing end them. To die: to sleep; No more; and by a sleep to say we end "
             "The heart-ache and the thousand natural shocks That flesh is heir to. ") * 12


def open_window(model: str, scratch: Path):
    from PySide6.QtCore import QSettings

    from explorer.app.start.launch import make_app, new_window, start_model_thread
    from explorer.app.window.settings import AppSettings

    worker = start_model_thread()                # as launch() builds the window: the model thread first
    app = make_app()
    settings = AppSettings(QSettings(str(scratch / "settings.ini"), QSettings.Format.IniFormat))
    settings.theme = "light"
    window = new_window(app, settings, autosave_path=scratch / "autosave.json", worker=worker)
    errors: list[str] = []
    window.show_error = errors.append
    window.session.error_raised.disconnect()
    window.session.error_raised.connect(errors.append)
    window.resize(*WINDOW_SIZE)
    window.show()
    return app, window, errors


def close_window(app, window) -> None:
    """As the app ends: the window closed (its closeEvent stops playing and shuts the model thread down), its
    events run, then deleted while the QApplication exists (launch.tear_down). A window left to the interpreter
    was torn down at its shutdown, in no set order, while threads.stop_all joined the threads at exit."""
    from explorer.app.start.launch import tear_down

    window.close()
    app.processEvents()
    tear_down(window)


def wait(app, done, errors, what: str) -> None:
    """Run Qt's event loop until `done()`, as the app's own loop runs: asleep between events, with a
    check every CHECK_MS. (A loop of processEvents and 1 ms sleeps took Python's lock a thousand
    times a second from the model thread, which the real app never does.)"""
    from PySide6.QtCore import QEventLoop, QTimer

    deadline = time.monotonic() + TIMEOUT_S
    loop, timer = QEventLoop(), QTimer()

    def check() -> None:
        if done() or errors or time.monotonic() > deadline:
            loop.quit()

    timer.timeout.connect(check)
    timer.start(CHECK_MS)
    if not done():
        loop.exec()
    timer.stop()
    if errors:
        raise SystemExit(f"bench_app: {errors[0]}")
    if not done():
        raise SystemExit(f"bench_app: timed out waiting for {what}")


def load(app, window, errors, model: str, prompt: str | None) -> None:
    from explorer.app.window import model_refs

    window.prompt.set_text(prompt or model_refs.default_prompt(model))
    window.open_model(model)
    wait(app, lambda: window.session.trace is not None and not window.worker.busy, errors, "the prefill")


# ----- step -> repaint ------------------------------------------------------------------------
def step_to_repaint(app, window, errors, steps: int, skip: tuple[str, ...] = ()) -> dict:
    """Press Step; when the trace reaches the GUI thread the controller hands it to the session (the
    panels redraw), then pending paints are processed and the window is repainted synchronously."""
    arrivals: list[tuple[float, float]] = []

    def on_trace(_trace) -> None:          # connected after the controller's slot: the panels have redrawn
        for _ in range(3):                  # the scenes' posted updates, then the paints of the dirty regions
            app.processEvents()
        painted, cpu = time.perf_counter(), time.thread_time()
        window.repaint()                    # an upper bound: every widget of the window painted again
        arrivals.append((painted, cpu, time.perf_counter()))

    samples = []
    for _ in range(steps):
        before = window.session.trace.n_steps
        arrivals.clear()
        window.worker.trace_ready.connect(on_trace)
        cpu0, t0 = time.thread_time(), time.perf_counter()
        window.actions.step.trigger()
        wait(app, lambda: arrivals and window.session.trace.n_steps > before, errors, "a step")
        window.worker.trace_ready.disconnect(on_trace)
        t1, cpu1, t_full = arrivals[-1]
        model_ms = float(window.session.trace.steps[-1].ms)
        samples.append({"total_ms": 1e3 * (t1 - t0), "model_ms": model_ms,
                        "beyond_model_ms": 1e3 * (t1 - t0) - model_ms, "gui_cpu_ms": 1e3 * (cpu1 - cpu0),
                        "beyond_model_full_repaint_ms": 1e3 * (t_full - t0) - model_ms})
    result = {key: round(statistics.median(s[key] for s in samples), 1) for key in samples[0]}
    result["visible_panels"] = [name for name, dock in window.docks.items()
                                if getattr(dock.widget(), "is_shown", dock.widget().isVisible)()]
    result["per_panel_redraw_ms"] = per_panel_redraw(app, window, skip)
    return result


def per_panel_redraw(app, window, skip: tuple[str, ...] = ()) -> dict:
    """Each panel's own redraw + paint of the latest trace, raised in turn (hidden tabs cost nothing):
    the least of three, in wall ms and as [wall ms, GUI-thread CPU ms]."""
    costs = {}
    for name, dock in window.docks.items():
        if name == "prompt" or name in skip:
            continue
        dock.show()
        dock.raise_()
        app.processEvents()
        panel = dock.widget()
        runs = []
        try:
            for _ in range(3):
                t0, cpu0 = time.perf_counter(), time.thread_time()
                panel.refresh()
                app.processEvents()
                panel.repaint()
                runs.append((1e3 * (time.perf_counter() - t0), 1e3 * (time.thread_time() - cpu0)))
        except Exception as error:          # a panel being rewritten must not stop the other numbers
            costs[name] = f"failed: {type(error).__name__}: {error}"
            continue
        costs[name] = [round(min(r[0] for r in runs), 1), round(min(r[1] for r in runs), 1)]
    window.default_layout()
    for name in skip:
        window.docks[name].close()
    window.resize(*WINDOW_SIZE)
    return costs


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


# ----- a long prompt ------------------------------------------------------------------------------
def long_prompt(tokenizer, tokens: int) -> str:
    """LONG_TEXT repeated and cut where its `tokens`-th token ends."""
    text = LONG_TEXT * 2
    while len(tokenizer.encode(text).ids) < tokens:
        text *= 2
    spans = tokenizer.encode(text).spans
    return text[: spans[tokens - 1][1]]


def answer_questions(window) -> list[str]:
    """Record every trace-memory or context question, answered with the larger budget (or No)."""
    from explorer.app.run import budget_dialog

    asked: list[str] = []

    def choose(parent, title, text, offered):
        asked.append(text)
        return next((c for c in offered if c.key == budget_dialog.RAISE), offered[0])

    budget_dialog.choose, window.controller._agreed = choose, lambda title, question: asked.append(question) or False
    return asked


def cancel_long_prefill(app, window, errors, after_layers: int = 2) -> dict:
    """Run the typed prompt and press the progress dialog's Cancel after `after_layers` layers: how long until
    the window is idle again (the layer in flight ends first) and whether it shows nothing half done."""
    from PySide6.QtWidgets import QPushButton

    progress, pressed = window.controller.run_progress, []

    def on_progress(fraction, _text) -> None:
        if len(pressed) < 1 and round(fraction * window.controller.summary.info.n_layers) >= after_layers:
            pressed.append(time.perf_counter())
            progress.dialog.findChild(QPushButton).click()

    window.worker.run_progress.connect(on_progress)
    window.controller.run()
    wait(app, lambda: pressed and not window.worker.busy, errors, "the cancelled prefill")
    window.worker.run_progress.disconnect(on_progress)
    return {"cancelled_after_layers": after_layers, "cancel_to_idle_s": round(time.perf_counter() - pressed[0], 2),
            "nothing_shown_after_cancel": window.session.trace is None}


def long_step(app, window, errors, tokens: int, steps: int) -> dict:
    """Run a prompt of `tokens` tokens from the prompt box (once cancelled, then whole), then step_to_repaint."""
    from explorer.app.run.trace_budget import TraceCost

    asked = answer_questions(window)
    reports: list[float] = []
    shown: list[bool] = []
    progress = window.controller.run_progress

    def on_progress(fraction, _text) -> None:
        reports.append(fraction)
        shown.append(progress.dialog is not None and progress.dialog.isVisible())

    for name in LONG_SKIP:
        window.docks[name].close()
    budget = window.controller.trace_budget
    window.prompt.set_text(long_prompt(window.controller.summary.tokenizer, tokens))
    cancel = cancel_long_prefill(app, window, errors)
    window.worker.run_progress.connect(on_progress)
    started = time.perf_counter()
    window.controller.run()
    wait(app, lambda: (window.session.trace is not None and window.session.trace.n_tokens >= tokens - 2
                       and not window.worker.busy), errors, "the long prefill")
    prefill_s = time.perf_counter() - started
    window.worker.run_progress.disconnect(on_progress)
    result = {"tokens": window.session.trace.n_tokens, "prefill_s": round(prefill_s, 1),
              "trace_mb": round(TraceCost.measured(window.session.trace).held / 1e6),
              "default_budget_mb": budget // 10 ** 6, "budget_question_asked": bool(asked),
              "progress_reports": len(reports), "progress_dialog_shown": any(shown), **cancel}
    result["step_to_repaint"] = step_to_repaint(app, window, errors, steps, skip=LONG_SKIP)
    return result


# ----- a big paste --------------------------------------------------------------------------------
def big_paste(app, window, errors, chars: int) -> dict:
    """Paste `chars` characters over the prompt and wait for the token table to list every token.
    A 5 ms heartbeat timer runs meanwhile: its longest gap is how long the window froze."""
    from PySide6.QtCore import QTimer

    import numpy as np

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
    parser.add_argument("--only", choices=["step", "grid", "cold", "paste", "long-step"], action="append")
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
    if only & {"step", "grid", "paste", "long-step"}:
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
                report["long_step"] = long_step(app, window, errors, args.long_tokens, args.steps)
            close_window(app, window)
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
