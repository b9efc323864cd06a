"""Step -> repaint in the app's window, at the default prompt and at a long one run as a person runs it
(see bench_app.py for what each figure means). `profile`: the GUI thread's cProfile of the steps alone,
written where asked, to find what a step costs beyond the model's own step."""
from __future__ import annotations

import cProfile
import statistics
import time

from bench.app_window import LONG_TEXT, WINDOW_SIZE, wait

LONG_SKIP = ("attention", "atlas")      # closed at long context: measured by --only grid and their own benchmarks


# ----- step -> repaint ------------------------------------------------------------------------
def step_to_repaint(app, window, errors, steps: int, skip: tuple[str, ...] = (), profile: str | None = None) -> dict:
    """Press Step; when the trace reaches the GUI thread the controller hands it to the session (the
    panels redraw), then pending paints are processed and the window is repainted synchronously.
    `profile`: write the GUI thread's cProfile of the steps there (pstats format)."""
    arrivals: list[tuple[float, float]] = []

    def on_trace(_trace) -> None:          # connected after the controller's slot: the panels have redrawn
        for _ in range(3):                  # the scenes' posted updates, then the paints of the dirty regions
            app.processEvents()
        painted, cpu = time.perf_counter(), time.thread_time()
        window.repaint()                    # an upper bound: every widget of the window painted again
        arrivals.append((painted, cpu, time.perf_counter()))

    samples = []
    profiler = cProfile.Profile() if profile else None
    if profiler is not None:
        profiler.enable()                   # this thread only: the model thread's step is not in it
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
    if profiler is not None:
        profiler.disable()
        profiler.dump_stats(profile)
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


def long_step(app, window, errors, tokens: int, steps: int, profile: str | None = None) -> dict:
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
    result["step_to_repaint"] = step_to_repaint(app, window, errors, steps, skip=LONG_SKIP, profile=profile)
    return result
