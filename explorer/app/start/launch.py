"""Start the app: a QApplication with the chosen theme, the main window and its first model.

`launch(args)` opens `args.model`, or the default (the pulled SmolLM2-135M,
else the bundled Shakespeare model), with a prompt it completes well, and
prefills it, so every panel shows something at once. Before that it offers to
restore a session that ended in a crash, unless `--no-restore` (or
TRANSFORMER_EXPLORER_NO_RESTORE=1) says not to ask. `--self-test` opens the
window offscreen, loads the bundled model (or `--model`), runs three steps,
exports one image and exits 0, or nonzero with the reason on stderr: the
packaged app's smoke test. `--screenshots DIR` drives a real window and saves
it and every panel as PNGs (see explorer.app.start.screenshots).
"""
from __future__ import annotations

import gc
import os
import sys
import tempfile
from pathlib import Path
from unittest import mock

from PySide6.QtCore import QCoreApplication, QEvent, QSettings
from PySide6.QtWidgets import QApplication, QMessageBox

from explorer.app.start.boot import SELF_TEST_TIMEOUT_S, SelfTestFailure, _wait, make_app  # noqa: F401 (re-exported)
from explorer.app.thread import threads
from explorer.app.thread.gc_guard import collect_on_gui_thread
from explorer.app.window import model_refs
from explorer.app.window.settings import AppSettings

DEFAULT_PROMPT = "To be, or not to be, that is the question:"      # the self-test's, for the bundled model
NO_RESTORE_ENV = "TRANSFORMER_EXPLORER_NO_RESTORE"


def apply_theme(app: QApplication, choice: str, root=None) -> str:
    """explorer.app.window.theme.apply_theme, imported on first use: it imports pyqtgraph (0.4 s), which the
    model thread need not wait behind."""
    from explorer.app.window.theme import apply_theme as apply  # start-up: pyqtgraph after the model thread

    return apply(app, choice, root)


def start_model_thread():
    """The model thread, started before anything else of the app (the QApplication included).

    It begins by importing torch (about 2 s here), the largest part of a cold start; started first,
    it runs while this thread makes the application, imports pyqtgraph and the panels and builds
    the window, and the model load queued by `open_model` follows it at once.
    """
    from explorer.app.thread.worker import ModelWorker  # start-up: the model thread first of all

    return ModelWorker()


def new_window(app: QApplication, settings: AppSettings, autosave_path: str | Path | None = None, worker=None):
    """The main window, on `worker` (see start_model_thread; one is started here if not given)."""
    worker = worker or start_model_thread()
    from explorer.app.window.main_window import MainWindow  # start-up: the panels import after the model thread

    apply_theme(app, settings.theme)
    window = MainWindow(worker=worker, settings=settings, autosave_path=autosave_path)
    worker.setParent(window)
    return window


def follow_system_theme(app: QApplication, settings: AppSettings, window) -> None:
    """Re-apply the palette when the desktop switches between light and dark, unless a theme was chosen."""
    def on_change(_scheme) -> None:
        if settings.theme == "system":
            apply_theme(app, "system", window)

    app.styleHints().colorSchemeChanged.connect(on_change)


def tear_down(window) -> None:
    """After the event loop: delete the window while the QApplication still exists, so that no widget is
    left for the interpreter's teardown to destroy in an arbitrary order (it crashed the process with
    SIGSEGV about one exit in ten after a clean close).

    The app's threads are stopped and joined first (atexit would do it only later): a thread
    that emits a signal of a window's object while the window is deleted on this thread reads freed memory,
    and a quit mid-pull, its thread emitting progress, ended with SIGSEGV and no word (a fresh-clone run)."""
    threads.stop_all_at_quit()
    window.deleteLater()
    QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
    gc.collect()


def launch(args) -> int:
    if getattr(args, "self_test", False):
        return self_test(getattr(args, "model", None))
    if getattr(args, "screenshots", None):
        from explorer.app.start.screenshots import take_screenshots  # only for --screenshots

        return take_screenshots(args.screenshots, getattr(args, "model", None), getattr(args, "prompt", None))
    worker = start_model_thread()
    app = make_app()
    collect_on_gui_thread(app)
    settings = AppSettings()
    window = new_window(app, settings, worker=worker)
    follow_system_theme(app, settings, window)
    show_sized_to_screen(window, settings)
    if restore_allowed(args) and (window.offer_crash_restore() or relaunched(window, args)):
        code = app.exec()
        tear_down(window)
        return code
    if restore_allowed(args):                # a script's run (--no-restore) is not a person's first start
        from explorer.app.window.learn_placement import open_on_first_start  # start-up: after the model thread

        open_on_first_start(window, settings)
    # The model asked for, else the one open at the last quit (a relaunch; not a script's run), else the default.
    reopened = model_refs.reopened_model(settings.last_model) if restore_allowed(args) else None
    reference = getattr(args, "model", None) or reopened or model_refs.default_model()
    window.prompt.set_text(getattr(args, "prompt", None) or first_prompt(settings.last_prompt, reference))
    if reference:
        if reference == reopened and not getattr(args, "model", None):
            fall_back_if_refused(window, reference, model_refs.default_model())
        window.open_model(reference)          # once loaded, the controller prefills the prompt
        notice = model_refs.fallback_notice(reference, getattr(args, "model", None))
        if notice:
            window.statusBar().showMessage(notice, 30000)
        step_after_prefill(window, getattr(args, "steps_at_start", 0) or 0)
    else:
        QMessageBox.information(window, "No model yet", model_refs.HOW_TO_GET_A_MODEL)
    code = app.exec()
    tear_down(window)
    return code


def fall_back_if_refused(window, reference: str, fallback: str | None) -> None:
    """If the model open at the last quit is refused now (a file since damaged or changed), open `fallback` (the
    default model) once its error was said: a relaunch left the window with no model at all (boundary27). A
    model the person named on the command line is not replaced: its error is the answer."""
    def on_failed(failed: str) -> None:
        stop()
        if failed == reference and fallback and fallback != reference and window.controller.summary is None:
            line, why = window.status.error_line, [window.status.error_line.message]

            def heard(message: str) -> None:           # the refusal, said before or after load_failed
                why[0] = message or why[0]

            def done(*_) -> None:     # the fallback opened or was refused too: a later model is the person's own
                window.controller.model_ready.disconnect(said)
                window.controller.load_failed.disconnect(done)
                line.changed.disconnect(heard)

            def said(*_) -> None:      # in the error line, which the fallback's load cleared: it stays till closed
                done()
                line.show_error(f"The model open last time could not be opened, so {model_refs.short_name(fallback)} "
                                "opened instead." + (f"\n{why[0]}" if why[0] else ""))
            line.changed.connect(heard)
            window.controller.model_ready.connect(said)
            window.controller.load_failed.connect(done)
            window.open_model(fallback)

    def stop(*_) -> None:
        window.controller.load_failed.disconnect(on_failed)
        window.controller.model_ready.disconnect(stop)

    window.controller.load_failed.connect(on_failed)
    window.controller.model_ready.connect(stop)


def step_after_prefill(window, n_steps: int) -> None:
    """Hidden --steps-at-start N (tests/app/test_kill_restore.py): once the prompt is prefilled, press Step N times."""
    if n_steps <= 0:
        return

    def on_trace(trace) -> None:
        if trace is not None and trace.n_steps == 1:
            window.session.trace_changed.disconnect(on_trace)
            for _ in range(n_steps):
                window.controller.step()

    window.session.trace_changed.connect(on_trace)


def relaunched(window, args) -> bool:
    """A relaunch with no model or prompt asked: the session quit in is back, its decoded steps too (a long one
    waits for Run); True when restored (crash_restore.restore_quit_session)."""
    if getattr(args, "model", None) or getattr(args, "prompt", None):
        return False
    from explorer.app.window.crash_restore import restore_quit_session  # start-up: after the model thread

    return restore_quit_session(window)


def restore_allowed(args) -> bool:
    """Whether to ask about a crashed session: not with --no-restore or TRANSFORMER_EXPLORER_NO_RESTORE=1."""
    return not getattr(args, "no_restore", False) and os.environ.get(NO_RESTORE_ENV, "") in ("", "0")


def first_prompt(last_prompt: str, reference: str | None) -> str:
    """The person's last prompt, unless it was only some model's default: then this model's default."""
    if last_prompt and not model_refs.is_default_prompt(last_prompt):
        return last_prompt
    return model_refs.default_prompt(reference)


def show_sized_to_screen(window, settings: AppSettings) -> None:
    """The saved geometry if there is one; on a first run, the screen's available area (the window fits
    itself when shown, see MainWindow.showEvent), so the panels have room. Not by asking to be maximised:
    only a window manager maximises, and on a bare X screen the window kept a smaller fit."""
    window.show()


# ----- the packaged app's smoke test ------------------------------------------------------------
def self_test(model: str | None = None) -> int:
    """Offscreen: open the window, load a model, run three steps, export one image and an MP4 of the steps.
    0 when all worked."""
    os.environ["QT_QPA_PLATFORM"] = "offscreen"
    reference = model or (str(model_refs.bundled_model_path()) if model_refs.bundled_model_path() else None)
    if reference is None:
        print("self-test: no model given and no bundled model in resources/models", file=sys.stderr)
        return 1
    app = make_app()
    with tempfile.TemporaryDirectory(prefix="explorer-self-test-") as folder, \
            mock.patch.dict(os.environ, {"TRANSFORMER_EXPLORER_HOME": str(Path(folder) / "store")}):
        # a store of its own: the check must not put its model in the user's recent list
        try:
            result = _run_self_test(app, reference, Path(folder))
        except SelfTestFailure as failure:
            print(f"self-test failed: {failure}", file=sys.stderr)
            return 1
    print(f"self-test passed: {result}")
    return 0


def _run_self_test(app: QApplication, reference: str, folder: Path) -> str:
    # only for --self-test, after its model thread started (as new_window)
    from explorer.app.figures.animation import export_animation, read_animation
    from explorer.app.window.main_window import MainWindow
    from explorer.drawing import export

    settings = AppSettings(QSettings(str(folder / "settings.ini"), QSettings.Format.IniFormat))
    apply_theme(app, "light")
    window = MainWindow(settings=settings, autosave_path=folder / "autosave.json")
    errors: list[str] = []
    window.show_error = errors.append               # no modal dialogs offscreen: collect instead
    window.session.error_raised.disconnect()
    window.session.error_raised.connect(errors.append)
    try:
        window.show()
        window.prompt.set_text(DEFAULT_PROMPT)
        window.open_model(reference)
        _wait(app, lambda: errors or (window.session.trace is not None and not window.worker.busy),
              f"{reference} to load and prefill")
        for _ in range(3):
            window.controller.step()
            _wait(app, lambda: errors or not window.worker.busy, "a decoding step")
        if errors:
            raise SelfTestFailure(errors[0])
        trace = window.session.trace
        if trace is None or trace.n_steps != 4:
            raise SelfTestFailure(f"expected a prefill and 3 steps, got {trace.n_steps if trace else 0} steps")
        image = export.export_attention(trace, folder / "attention.png", 0, 0)
        if Path(image).stat().st_size == 0:
            raise SelfTestFailure("the exported image is empty")
        video = export_animation(trace, folder / "decoding.mp4", 0, 0, size=(320, 240))   # the bundled ffmpeg runs
        if read_animation(video).shape[0] != trace.n_steps:
            raise SelfTestFailure("the MP4 animation does not hold a frame per step")
        return f"{trace.model.name}: {trace.n_tokens} tokens, exported {Path(image).name} and {video.name}"
    finally:
        window.close()
