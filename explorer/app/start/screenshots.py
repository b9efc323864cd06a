"""Drive the real app in a real window and save it, and each panel, as PNG: the README's pictures.

`transformer-explorer --screenshots DIR [--model M] [--prompt P]` opens the model in
its default layout, which fills the screen, types the prompt into the editor key by key
as a person would, runs the prefill and three steps, then saves `window.png`, one
`tab_<name>.png` per bottom tab (the whole window with that tab raised, as a person
sees it on this screen) and one `panel_<name>.png` per dock, each dock floated at a
readable size and raised before it is grabbed. It exits 0 when every picture was
written. `packaging/screenshots.py` starts Xvfb at each screen size and runs it.
"""
from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from PySide6.QtCore import QSettings
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication

from explorer.app.start.boot import SelfTestFailure, _wait, make_app
from explorer.app.window import model_refs
from explorer.app.window.main_window import MainWindow
from explorer.app.window.settings import AppSettings
from explorer.app.window.theme import apply_theme

PANEL_SIZES = {"tokens": (900, 520), "attention": (1400, 760), "next_token": (900, 760),
               "embeddings": (1200, 700), "qkv": (1400, 700), "mask": (1000, 800), "kv_cache": (1200, 950),
               "kv_lab": (1300, 900)}
PANEL_SIZE = (1100, 700)
STEPS = 3
TRANSLATION_STEPS = 24       # an encoder-decoder steps until its target ends (at most this many)
LOG_SCALE_FROM = 100                          # tokens
SETTLE_S = 0.6


def take_screenshots(folder: str | Path, model: str | None = None, prompt: str | None = None) -> int:
    """Write the pictures into `folder`; 0 when all were written, 1 with the reason on stderr."""
    app = make_app()
    out = Path(folder).expanduser()
    out.mkdir(parents=True, exist_ok=True)
    bundled = model_refs.bundled_model_path()
    reference = model or model_refs.default_model() or (str(bundled) if bundled else None)
    if reference is None:
        print("screenshots: no model given, none pulled and none bundled", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory(prefix="explorer-screenshots-") as scratch:
        try:
            written = _drive(app, reference, prompt or model_refs.default_prompt(reference), out, Path(scratch))
        except SelfTestFailure as failure:
            print(f"screenshots failed: {failure}", file=sys.stderr)
            return 1
    print("\n".join(str(path) for path in written))
    return 0


def _drive(app: QApplication, reference: str, prompt: str, out: Path, scratch: Path) -> list[Path]:
    settings = AppSettings(QSettings(str(scratch / "settings.ini"), QSettings.Format.IniFormat))
    apply_theme(app, "light")
    window = MainWindow(settings=settings, autosave_path=scratch / "autosave.json")
    errors: list[str] = []
    window.show_error = errors.append               # no modal dialogs in a scripted run: collect instead
    window._terms_accepted = lambda reference: True  # whoever scripts the shots pulled with --accept-license
    window.session.error_raised.disconnect()
    window.session.error_raised.connect(errors.append)
    try:
        window.show()                               # the default layout fits the screen
        window.open_model(reference)
        _wait_for(app, lambda: window.controller.summary is not None and window.controller.loading is None,
                  f"{reference} to load", errors)
        _type_and_decode(app, window, prompt, errors)
        _choose_view(window)
        _ask_logit_lens(app, window, errors)
        return _grab_all(app, window, out)
    finally:
        window.close()


def _type_and_decode(app: QApplication, window, prompt: str, errors: list[str]) -> None:
    window.prompt.setFocus()
    QTest.keyClicks(window.prompt, prompt)
    window.prompt.settle()
    window.actions.run.trigger()
    _wait_for(app, lambda: window.session.trace is not None and not window.worker.busy, "the prefill", errors)
    translating = window.session.trace.model.is_encoder_decoder
    for _ in range(TRANSLATION_STEPS if translating else STEPS):
        if window.controller.end_of_text(window.session.trace) is not None:
            break                                   # the text ended (a whole translation): no step follows
        before = window.session.trace.n_steps
        window.actions.step.trigger()
        _wait_for(app, lambda: window.session.trace.n_steps > before and not window.worker.busy,
                  "a decoding step", errors)


def _choose_view(window) -> None:
    """The last prompt token (whose next token the prefill chose), the head that looks furthest past the
    first token from it, and cross-attention for an encoder-decoder."""
    trace = window.session.trace
    cross = getattr(trace, "encoder", None) is not None
    token = int(trace.steps[0].n_new) - 1
    kinds = trace.model.layer_kinds
    sliding = [i for i, kind in enumerate(kinds) if kind == "sliding"]
    window_is_visible = sliding and trace.n_tokens > (trace.model.sliding_window or trace.n_tokens)
    layer, head = telling_head(trace, token, cross, sliding if window_is_visible else None)
    window.session.select(layer=layer, head=head, token=token, attention="cross" if cross else "self")
    if trace.n_tokens > LOG_SCALE_FROM:       # weights spread thin over many keys: a log scale shows them
        window.docks["attention"].widget().scale_box.setCurrentIndex(1)


def telling_head(trace, token: int, cross: bool = False, layers=None) -> tuple[int, int]:
    """(layer, head) whose weights from `token` put the most on one earlier key other than key 0, where
    most heads park their attention (the attention sink), and other than itself: a head doing something."""
    layers = list(layers) if layers else list(range(trace.model.n_layers))
    best, choice = -1.0, (layers[len(layers) // 2], 0)
    for layer in layers:
        row = trace.attention(layer, None, cross)[:, token, :]          # (H, N_KV)
        keys = row[:, 1:token] if cross is False and token > 1 else row
        focus = keys.max(axis=1)
        head = int(focus.argmax())
        if float(focus[head]) > best:
            best, choice = float(focus[head]), (layer, head)
    return choice


def _ask_logit_lens(app: QApplication, window, errors: list[str]) -> None:
    """Press the next-token panel's logit-lens button, as a person would, and wait for the answer."""
    panel = window.docks["next_token"].widget()
    answers = []
    window.session.requests.logit_lens_ready.connect(answers.append)
    panel.lens_button.click()
    _wait_for(app, lambda: bool(answers), "the logit lens", errors)
    window.session.requests.logit_lens_ready.disconnect(answers.append)
    panel.lens_table.scrollToBottom()           # the last layers, where the answer emerges


def _wait_for(app: QApplication, done, what: str, errors: list[str]) -> None:
    """Process events until `done()`; the first error the app reported ends the run with its sentence."""
    _wait(app, lambda: errors or done(), what)
    if errors:
        raise SelfTestFailure(errors[0])


def _settle(app: QApplication, seconds: float = SETTLE_S) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        app.processEvents()
        time.sleep(0.01)


def _grab_all(app: QApplication, window, out: Path) -> list[Path]:
    written = []
    window.raise_()
    window.activateWindow()
    _settle(app)
    written.append(_save(_grab_window(window), out / "window.png"))
    written += _grab_tabs(app, window, out)
    for name, dock in window.docks.items():
        if name != "prompt":
            written.append(_save(_grab_dock(app, dock, PANEL_SIZES.get(name, PANEL_SIZE)), out / f"panel_{name}.png"))
    return written


def _grab_tabs(app: QApplication, window, out: Path) -> list[Path]:
    """The window once with each tab of the bottom area raised (the first one raised again after)."""
    area = window.dockWidgetArea(window.docks["embeddings"]) if "embeddings" in window.docks else None
    tabs = [(name, dock) for name, dock in window.docks.items() if window.dockWidgetArea(dock) == area]
    written = []
    for name, dock in tabs:
        dock.raise_()
        _settle(app)
        written.append(_save(_grab_window(window), out / f"tab_{name}.png"))
    if tabs:
        tabs[0][1].raise_()
    return written


def _grab_window(window):
    """The window as the X server shows it (the real framebuffer), else as Qt paints it."""
    screen = window.screen()
    pixmap = screen.grabWindow(window.winId()) if screen is not None else None
    return pixmap if pixmap is not None and not pixmap.isNull() else window.grab()


def _grab_dock(app: QApplication, dock, size: tuple[int, int]):
    dock.setFloating(True)
    dock.resize(*size)
    dock.show()
    dock.raise_()
    _settle(app)
    pixmap = dock.grab()
    dock.setFloating(False)
    return pixmap


def _save(pixmap, path: Path) -> Path:
    if pixmap.isNull() or not pixmap.save(str(path), "PNG"):
        raise SelfTestFailure(f"could not save {path}")
    return path
