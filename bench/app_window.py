"""The app's window as the benchmarks drive it: opened at a fixed size with a scratch settings file, on an
offscreen screen of a given size, errors recorded instead of shown, Qt's event loop run until a condition holds,
and torn down as the app ends. Shared by bench_app.py, bench_tab_raise.py, profile_turns.py and app_steps.py."""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

WINDOW_SIZE = (1600, 1000)
# Qt's own offscreen screen is 800x800: it held the 1600x1000 window to 796x796, narrower than any screen the app
# is for, where a first raise of a wide tab (the KV lab) laid out every dock of the window again.
SCREEN = "1600x1000"
TIMEOUT_S = 600.0
CHECK_MS = 5
LONG_TEXT = ("To be, or not to be, that is the question: Whether 'tis nobler in the mind to suffer "
             "The slings and arrows of outrageous fortune, Or to take arms against a sea of troubles "
             "And by opposing end them. To die: to sleep; No more; and by a sleep to say we end "
             "The heart-ache and the thousand natural shocks That flesh is heir to. ") * 12


def use_screen(size: str, folder: Path) -> None:
    """Qt's offscreen platform with one screen of `size` ("WxH", read from a JSON file in `folder`), unless another
    platform was asked for. Before the QApplication is made."""
    if os.environ.get("QT_QPA_PLATFORM", "offscreen").split(":")[0] != "offscreen":
        return
    width, height = (int(side) for side in size.split("x"))
    config = folder / "screen.json"
    config.write_text(json.dumps({"screens": [{"name": "bench", "x": 0, "y": 0, "width": width, "height": height,
                                               "logicalDpi": 96, "logicalBaseDpi": 96, "dpr": 1}]}))
    os.environ["QT_QPA_PLATFORM"] = f"offscreen:configfile={config}"


def open_window(model: str, scratch: Path, screen: str = SCREEN):
    """The window at WINDOW_SIZE on an offscreen screen of `screen` ("WxH"; settings and screen in `scratch`)."""
    from PySide6.QtCore import QSettings

    from explorer.app.start.launch import make_app, new_window, start_model_thread
    from explorer.app.thread import preload
    from explorer.app.thread.gc_guard import collect_on_gui_thread
    from explorer.app.window.settings import AppSettings

    use_screen(screen, scratch)
    # As the command line and launch() start the app: the core imported on the model thread (then frozen out of the
    # collector), the model thread first, garbage collected on the GUI thread (gc_guard).
    preload.start()
    worker = start_model_thread()
    app = make_app()
    collect_on_gui_thread(app)
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


def tab_drawn(dock) -> bool:
    """The dock's panel built, in sight and drawn, its drawing's parts all run: its own (Panel.drawing) and those of
    its figures (any widgets.turns.Turns under it, such as the KV lab's bytes plots, built and drawn a part a turn
    after the panel's drawing: not waited for, they ran in the next tab's raise and were counted there)."""
    from explorer.app.widgets.turns import Turns

    if not dock.built:
        return False
    panel = dock.widget()
    return (getattr(panel, "is_shown", lambda: True)() and not getattr(panel, "_dirty", False)
            and not any(turns.running for turns in panel.findChildren(Turns)))
