"""After a crash: the question whether to restore the autosaved session (see session_file.Autosaver).

Only an autosave whose window has died is offered; another window's, still running, is left
alone; one with no model, prompt or experiment (a run killed before it had any) is removed unasked: "Restore its
session (no model, a 0-character prompt)?" restored nothing (drive26). An autosave that cannot be read was moved
aside by session_file.find_crashed: a warning and the error line (and stderr) say so, and the start goes on.

A session whose replay is long (session_restore.is_long: minutes of work on a CPU) is offered three ways:
restored and run, restored without running (its prompt waits for Run), or not restored. Whatever the answer,
its prompt is not lost: declined, it is the last prompt, which the start puts in the editor.

After a clean quit there is no question: the session quit in (session_file.quit_session, kept at the exit)
comes back with its decoded steps (restore_quit_session), as File ▸ Open Session brings them; a long one is put
back waiting for Run, as a relaunch's long last prompt is (issue 22 #18: nothing long starts unasked).
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Callable

from PySide6.QtWidgets import QMessageBox, QWidget

from explorer.app.run.session_restore import is_long, replay_tokens
from explorer.app.state.session_file import SessionState, find_crashed, forget, quit_session
from explorer.app.widgets.dialog_focus import take_focus_if_none
from explorer.app.window.model_refs import reopened_model, short_name

NOTICE_MS = 30000
TITLE = "Restore the last session?"
RUN, WITHOUT_RUNNING, DECLINE = "run", "without running", "decline"


def offer_crash_restore(parent: QWidget, autosave_path: str | Path | None,
                        restore: Callable[[SessionState], None],
                        put_back: Callable[[SessionState], None] | None = None,
                        keep_prompt: Callable[[str], None] | None = None) -> bool:
    """Asks whether to restore the session a dead run left beside `autosave_path` (this window's own
    autosave); True when restored (`restore`, or `put_back`: restored without running, offered where given).
    Answered either way, the dead run's file is removed; declined, its prompt goes to `keep_prompt`."""
    notices: list[str] = []
    found = find_crashed(autosave_path, notices)
    removed: set[Path] = set()
    while found is not None and not (found.state.model or found.state.prompt or found.state.experiments):
        if Path(found.path) in removed:  # could not be removed (a read-only folder): not asked about either
            found = None
            break
        removed.add(Path(found.path))
        forget(found.path)               # a run that died before it had a model or a prompt: nothing to restore
        found = find_crashed(autosave_path, notices)
    _tell(parent, notices)
    if found is None:
        return False
    state = found.state
    answer = ask(parent, state, without_running=put_back is not None)
    if Path(found.path) != Path(autosave_path or ""):
        forget(found.path)               # restored, this window autosaves it under its own name
    if answer == DECLINE:
        if keep_prompt is not None and state.prompt:
            keep_prompt(state.prompt)
        return False
    (restore if answer == RUN else put_back)(state)
    return True


def restore_quit_session(window) -> bool:
    """At a launch after a clean quit, the session `window`'s folder quit in, when it had decoded steps or
    experiments and its model still opens: replayed with its decoded ids, or, when the replay is long (is_long),
    put back waiting for Run. True when restored; False leaves the launch to open the last model and prompt (a
    session with no step decoded and no experiment is no more than they are; one with experiments and no step
    came back without them, unsaid: drive23)."""
    state = quit_session(window.autosaver.path)
    if state is None or (state.steps < 2 and not state.experiments) or reopened_model(state.model) is None:
        return False
    window.restore_session(state, run=not is_long(state))
    return True


def ask(parent: QWidget, state: SessionState, without_running: bool = True) -> str:
    """RUN, WITHOUT_RUNNING or DECLINE: Yes or No for a session quick to replay, three buttons for a long one
    (`without_running`), where Enter (the default) restores without running and Escape declines, so nothing
    long starts unasked."""
    steps = f", {state.steps - 1} decoded tokens" if state.steps > 1 else ""
    if state.edited and state.steps:    # the tokens were decoded after the prompt that ran, not this one (drive29b)
        steps = f", edited after a run of {state.steps - 1} decoded tokens" if state.steps > 1 else \
            ", edited after its run"
    question = (f"Transformer Explorer did not close cleanly last time. Restore its session "
                f"({short_name(state.model or 'no model')}, a {len(state.prompt):,}-character prompt{steps})?")
    if not (without_running and is_long(state)):
        answer = QMessageBox.question(parent, TITLE, question)
        return RUN if answer == QMessageBox.StandardButton.Yes else DECLINE
    box = QMessageBox(QMessageBox.Icon.Question, TITLE, question, parent=parent)
    decoded = " (not its decoded tokens)" if state.steps > 1 else ""
    box.setInformativeText(f"Running it again goes through {replay_tokens(state):,} tokens, which can take "
                           f"minutes. Restored without running, its model, prompt and experiments are back{decoded}, "
                           "and Run (Ctrl+Enter) runs the prompt when you choose.")
    run = box.addButton("Restore and &Run", QMessageBox.ButtonRole.AcceptRole)
    without = box.addButton("Restore &Without Running", QMessageBox.ButtonRole.ActionRole)
    box.addButton("&Don't Restore", QMessageBox.ButtonRole.RejectRole)
    box.setDefaultButton(without)
    box.exec()
    clicked = box.clickedButton()
    box.deleteLater()
    take_focus_if_none(parent)          # on a bare X screen no window was active once the box closed
    return RUN if clicked is run else WITHOUT_RUNNING if clicked is without else DECLINE


def _tell(parent: QWidget, notices: list[str]) -> None:
    """Say that an autosave was set aside: on stderr, and through the window's one door for errors (its error
    line and a warning), since a session the person may miss is gone from the restore; a status bar notice went
    under the start's own messages before anyone read it (boundary27). A bare window gets the notice."""
    for notice in notices:
        print(notice, file=sys.stderr)
    if not notices:
        return
    show_error = getattr(parent, "show_error", None)
    status = getattr(parent, "statusBar", None)
    if callable(show_error):
        show_error(" ".join(notices))
    elif callable(status):
        status().showMessage(" ".join(notices), NOTICE_MS)
