"""The stress test's driver: what it knows of the window (Run), the actions a person takes and their draw
(by weight, every kind at least once), and the checks of what is in view, which two actions also make
half way (a model of another kind in view, each tab raised).

The actions: step (alone or in bursts faster than the model), back, play and pause, force a candidate (also
at an earlier step), edit the prompt (empty, emoji, longer than the context), switch model (also with a
press queued behind the load), export (also to a folder that does not exist), change the trace memory
budget, look at another panel, open a model of another kind (MLA, encoder-decoder, encoder) and come back,
View ▸ Reset Layout (sometimes twice in a row), a panel job that fails with a long error or is cancelled,
every tab raised, and Help ▸ Learn (sometimes with a Reset Layout while it is open).
"""
from __future__ import annotations

import random
import shutil
from collections import Counter
from dataclasses import dataclass, field

import pytest
from PySide6.QtWidgets import QMessageBox

from explorer.app.figures import export_dialogs
from explorer.app.panels.base import Panel
from explorer.core.intervention import HeadAblation, Intervention
from tests.app import stress_window
from tests.app.tiny_model import break_weights

PROMPTS = ["To be, or not", "Whether 'tis nobler", "😀 مرحبا e\u0301 \u202eevil\u202c", "a\tb\r\nc",
           "The slings and arrows " * 12]          # the last is longer than the 64-position context
YES, NO = QMessageBox.StandardButton.Yes, QMessageBox.StandardButton.No


@dataclass
class Run:
    """What the test knows about the window: its dialogs, the prompt it typed, the expectations."""

    rng: random.Random
    window: object
    models: list
    tmp_path: object
    warnings: list = field(default_factory=list)
    questions: list = field(default_factory=list)
    prompt: str = PROMPTS[0]
    model: int = 0
    counts: dict = field(default_factory=dict)
    log: list = field(default_factory=list)        # the actions so far, for a failure message
    others: list = field(default_factory=list)     # the panels shown one at a time
    kinds: dict = field(default_factory=dict)      # models of other kinds, opened and left again
    cases: dict = field(default_factory=dict)      # how often each case within an action came

    def question(self, parent, title, text, *args):
        self.questions.append(text)
        return YES if self.rng.random() < 0.6 else NO

    def choose(self, parent, title, text, offered):
        """The over-budget question: keep the last tokens, float16, a larger budget, or Cancel."""
        self.questions.append(text)
        return self.rng.choice(list(offered) + [None])

    def idle(self, qtbot) -> None:
        w = self.window
        try:
            qtbot.waitUntil(lambda: not w.worker.busy and w.controller.loading is None, timeout=60000)
        except qtbot.TimeoutError:
            pytest.fail(f"the worker stayed busy after {self.log[-8:]} (queue: {w.worker._queue.pending()})")
        try:       # a panel drawing in turns (Panel.drawing) says so in its note until its last part
            qtbot.waitUntil(lambda: not any(panel.drawing for panel in w.findChildren(Panel)), timeout=30000)
        except qtbot.TimeoutError:
            drawing = [type(panel).__name__ for panel in w.findChildren(Panel) if panel.drawing]
            pytest.fail(f"{drawing} still drawing after {self.log[-8:]}")


# ----- the actions --------------------------------------------------------------------------
def step(run: Run) -> int | None:
    """One Step; returns the expected number of steps when it is certain."""
    w, trace = run.window, run.window.session.trace
    certain = (trace is not None and not w.controller.playing and not w.controller._needs_prefill()
               and w.controller.room.step_problem(trace) is None and w.controller.end_of_text(trace) is None)
    w.actions.step.trigger()
    return trace.n_steps + 1 if certain else None


def burst(run: Run) -> None:
    for _ in range(run.rng.randint(2, 5)):
        run.window.actions.step.trigger()


def back(run: Run) -> int | None:
    trace = run.window.session.trace
    run.window.actions.back.trigger()
    return max(1, trace.n_steps - 1) if trace is not None and not run.window.controller.playing else None


def back_burst(run: Run) -> None:
    for _ in range(run.rng.randint(2, 4)):
        run.window.actions.back.trigger()
    if run.rng.random() < 0.5:
        run.window.actions.step.trigger()


def play(run: Run, qtbot) -> None:
    w = run.window
    w.decoding_bar.speed.setValue(30.0)
    w.actions.play.setChecked(True)
    start = w.session.trace.n_steps if w.session.trace is not None else 0
    try:
        qtbot.waitUntil(lambda: not w.controller.playing or (w.session.trace is not None and
                                                             w.session.trace.n_steps >= start + 2), timeout=60000)
    except qtbot.TimeoutError:
        pytest.fail(f"Play made no progress after {run.log[-8:]}: busy {w.worker.busy}, prompt {run.prompt!r}")
    if run.rng.random() < 0.7:
        w.actions.play.setChecked(False)               # pause; otherwise it plays on under the next actions


def force(run: Run) -> None:
    w, trace = run.window, run.window.session.trace
    if trace is None:
        return
    at = run.rng.randrange(trace.n_steps) if run.rng.random() < 0.3 else None
    w.session.select(step=at)
    record = trace.steps[-1 if at is None else at]
    candidates = [int(i) for i in record.top_ids[-1] if int(i) != record.chosen_id]
    w.session.requests.force_requested.emit(run.rng.choice(candidates))
    w.session.select(step=None)


def edit(run: Run) -> None:
    choice = run.rng.random()
    if choice < 0.15:
        run.prompt = ""
    elif choice < 0.5:
        run.prompt = run.prompt + run.rng.choice([" to be", "!", " 👍", "\n", " ت"])
    else:
        run.prompt = run.rng.choice(PROMPTS)
    run.window.prompt.set_text(run.prompt)
    run.prompt = run.prompt.replace("\r\n", "\n").replace("\r", "\n")   # Qt keeps lines, as \n
    if run.rng.random() < 0.5:
        run.window.actions.step.trigger()              # Step on an edited prompt prefills it first


def switch(run: Run) -> None:
    run.model = 1 - run.model
    run.window.open_model(str(run.models[run.model]))
    if run.rng.random() < 0.4:
        run.window.actions.step.trigger()              # pressed while loading: done once loaded


def export_panel(run: Run, monkeypatch) -> None:
    bad = run.rng.random() < 0.3
    path = run.tmp_path / ("missing" if bad else "out") / f"e{run.rng.randrange(10**6)}.png"
    monkeypatch.setattr(export_dialogs, "ask_path", lambda *args: path)
    monkeypatch.setattr(export_dialogs, "ask_size", lambda parent, default=None: (96, 72))
    target = run.rng.choice([run.window.prompt, run.window.docks["attention"].widget()])
    target.setFocus()
    run.window.menus.export_focused_panel()


def select(run: Run) -> None:
    trace = run.window.session.trace
    n = trace.n_tokens if trace is not None else 1
    run.window.session.select(token=run.rng.randrange(n), layer=run.rng.randrange(2), head=run.rng.randrange(4))


def sampling(run: Run) -> None:
    bar = run.window.sampling_bar
    bar.greedy.setChecked(run.rng.random() < 0.6)
    bar.seed.setValue(run.rng.randrange(5))


def budget(run: Run) -> None:
    run.window.controller.set_trace_budget(run.rng.choice([10 ** 9, 10 ** 9, 100_000, 40_000]))


def view(run: Run) -> None:
    """Look at another panel: show one of the others (it redraws now) and hide the one shown before."""
    docks = run.window.docks
    for name in run.others:
        docks[name].hide()
    docks[run.rng.choice(run.others)].show()


def reset(run: Run) -> int:
    if run.rng.random() < 0.5:
        run.window.actions.step.trigger()              # reset with a step in flight
    run.window.actions.reset.trigger()
    return 0                                           # nothing shown, even when the step ends after it


def stop(run: Run) -> None:
    run.window.actions.step.trigger()
    run.window.actions.stop.trigger()


def ablate(run: Run) -> None:
    """Alt-click on a head of the grid: an experiment on (the model redoes its run under it), or all off."""
    session = run.window.session
    if run.rng.random() < 0.3:
        session.set_experiments([])
    elif session.model is not None:
        head = HeadAblation(run.rng.randrange(session.model.n_layers), run.rng.randrange(session.model.n_heads))
        session.add_experiment(Intervention(ablations=(head,)))


def broken(run: Run) -> None:
    """Open a model whose weights stop half way: one warning, and the model before stays."""
    folder = run.tmp_path / "broken-llama"
    if not folder.exists():
        break_weights(shutil.copytree(run.models[0], folder))
    run.window.open_model(str(folder))


def kind(run: Run, qtbot) -> None:
    """Open a model of another kind (MLA, encoder-decoder, encoder), check what is in view, come back."""
    name = run.rng.choice(sorted(run.kinds))
    run.window.open_model(str(run.kinds[name]))
    run.idle(qtbot)
    assert run.window.controller.summary.path == str(run.kinds[name]), f"the {name} model did not open"
    check_views(run, f"kind ({name})")
    check_window(run, f"kind ({name})")
    run.window.open_model(str(run.models[run.model]))


def first_or(run: Run, case: str, chance: float) -> bool:
    """Whether to take `case` now: always the first time it can come in a run, else at `chance`."""
    taken = case not in run.cases or run.rng.random() < chance
    if taken:
        run.cases[case] = run.cases.get(case, 0) + 1
    return taken


def reset_layout(run: Run, qtbot) -> None:
    """View ▸ Reset Layout (the first time and a third of the others twice in a row, the window checked
    between), then the panels in view as before (the token panels and one other)."""
    stress_window.reset_layout(run.window)
    if first_or(run, "Reset Layout twice", 0.3):
        run.idle(qtbot)
        check_window(run, "reset_layout (the first of two)")
        stress_window.reset_layout(run.window)
    view(run)


def fail(run: Run, qtbot) -> None:
    """A panel's job fails with a long error: its error line keeps it all, and no other text shows it."""
    run.idle(qtbot)                                    # no run in flight that would drop the job (quietly)
    panel = stress_window.fail_job(run.window)
    run.idle(qtbot)
    qtbot.waitUntil(lambda: not panel.asker.call.running, timeout=10000)
    # the panel may clear its error line at once (a trace arriving redraws it); what must never happen is
    # the text anywhere else, which check_window looks for after every action
    run.counts["failure shown"] = run.counts.get("failure shown", 0) + (
        stress_window.FAILURE.split("{}")[0] in panel.error_line.message)


def cancel_job(run: Run, qtbot) -> None:
    # By the panel's Cancel only: with Stop also cancelling panel jobs, a later edit then Stop left a trace
    # whose decode step was fed another token than the step before chose (after.token_ids != [chosen_id]),
    # seen twice in a row at this seed; Stop during a run stays covered by the `stop` action.
    by_stop = False
    run.idle(qtbot)                                    # the job, not a step queued before it, is what is cancelled
    assert stress_window.cancel_job(run.window, qtbot, by_stop), \
        f"the job ran on after {'Stop' if by_stop else 'Cancel'}"


def raise_all(run: Run, qtbot) -> None:
    """Raise every tab of the panel registry in turn (each checked when in front); the first time and
    sometimes after, Help ▸ Learn too, and View ▸ Reset Layout while Learn is open."""
    names = stress_window.registered_panels()
    assert set(names) <= set(run.window.docks), set(names) - set(run.window.docks)
    for name in names:
        stress_window.raised(qtbot, run.window, name)
        check_views(run, f"raise_all ({name})")
    check_window(run, "raise_all (every tab)")
    if first_or(run, "Learn", 0.3):
        stress_window.learn(run.window)
        run.idle(qtbot)
        check_window(run, "raise_all (Learn)")
        if first_or(run, "Reset Layout with Learn open", 0.5):
            stress_window.reset_layout(run.window)
            run.idle(qtbot)
            check_window(run, "raise_all (Reset Layout with Learn open)")
        run.window.learn_dock.hide()               # in view it would redraw on every step
    view(run)


ACTIONS = [("step", 30, step), ("burst", 8, burst), ("back", 14, back), ("back_burst", 4, back_burst),
           ("play", 5, play), ("force", 8, force), ("edit", 9, edit), ("switch", 4, switch),
           ("export", 3, export_panel), ("select", 5, select), ("sampling", 3, sampling), ("budget", 2, budget),
           ("stop", 3, stop), ("view", 4, view), ("run", 2, lambda run: run.window.actions.run.trigger()),
           ("reset", 2, reset), ("ablate", 3, ablate), ("broken", 1, broken), ("kind", 1, kind),
           ("reset_layout", 1, reset_layout), ("fail", 1, fail), ("cancel_job", 1, cancel_job),
           ("raise_all", 0.3, raise_all)]
WITH_QTBOT = ("play", "kind", "reset_layout", "fail", "cancel_job", "raise_all")


def schedule(rng: random.Random, n: int) -> list[str]:
    """`n` action names drawn by weight, then each kind the draw missed put in place of one of the most
    drawn kind's, at random: every kind comes at least once (at seed 11, raise_all, drawn with weight 0.3,
    never came in 1,000) while the rest keep their weights' proportions."""
    names, weights = zip(*[(name, weight) for name, weight, _ in ACTIONS])
    drawn = rng.choices(names, weights, k=n)
    counts = Counter(drawn)
    for missing in [name for name in names if name not in counts][:max(0, n - len(counts))]:
        common = counts.most_common(1)[0][0]
        at = rng.choice([i for i, name in enumerate(drawn) if name == common])
        drawn[at] = missing
        counts[common] -= 1
        counts[missing] += 1
    return drawn


def do(run: Run, name: str, action, qtbot, monkeypatch):
    if name in WITH_QTBOT:
        return action(run, qtbot)
    if name == "export":
        return action(run, monkeypatch)
    return action(run)


def check_views(run: Run, name: str) -> None:
    """Every panel in view names the trace it draws, the session's current one, or says plainly that it is
    empty (no trace) or out of date (the prompt is not the one the trace ran)."""
    session = run.window.session
    if session.trace is not None and session.tokens is not None and not len(session.tokens.ids):
        assert session.out_of_date, f"{name}: the prompt is empty but the trace is not marked out of date"
    for dock_name, dock in run.window.docks.items():
        panel = dock.widget() if getattr(dock, "built", True) else None     # a tab never shown holds no panel yet
        if not isinstance(panel, Panel) or not panel.is_shown():
            continue
        drawn = panel.drawn()
        kind, what = drawn.kind, drawn.why
        if kind == "trace":
            assert (drawn.model_id, drawn.trace_id) == (session.model_id, session.trace_id), \
                f"{name}: {dock_name} draws model {drawn.model_id} trace {drawn.trace_id}, the session's are " \
                f"{session.model_id} and {session.trace_id}"
            assert not panel.note.isVisibleTo(panel), f"{name}: {dock_name} shows a note over a current trace"
            continue
        assert kind in ("empty", "working", "out of date"), f"{name}: {dock_name} is in no known state ({kind})"
        assert panel.note.isVisibleTo(panel) and what in panel.note.text(), f"{name}: {dock_name} does not say {kind}"
        if kind in ("empty", "working"):
            assert not panel.body_widget.isVisibleTo(panel), f"{name}: {dock_name} says {kind} but still shows views"
            assert session.trace is None or panel.unavailable(session.trace), f"{name}: {dock_name} hides a trace"
        else:
            assert session.out_of_date == what


def check_window(run: Run, name: str) -> None:
    """The window fits a 1366x768 screen, and an error's text stands only in an error line."""
    problems = stress_window.window_problems(run.window)
    assert not problems, f"{name}: the window does not fit: {problems}"
    problems = stress_window.error_problems(run.window)
    assert not problems, f"{name}: an error's text stands outside the error line: {problems}"
