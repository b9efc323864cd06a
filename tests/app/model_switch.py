"""A panel's working state across a model switch, the journey several tests share: the real window opens a
5-layer tiny Llama, then a 2-layer one (and back), and looks at one panel inside the session's context_changed,
just after the panels took the new trace and asked their jobs. No answer can have come then (answers come through
the event loop), so the panel is in its working state; once the event loop ran, the new model's answer is drawn.
The expectations' layer counts come from each model's config.json."""
from __future__ import annotations

import json
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

from tests.app.tiny_model import make_tiny_llama
from tests.app.window_helpers import idle, new_window

PROMPT = "To be, or not to be, that is"


def layers_of(folder: Path) -> int:
    """The model's layer count, as its config.json says."""
    return int(json.loads((folder / "config.json").read_text())["num_hidden_layers"])


def raised(qtbot, window, name):
    """The panel of dock `name`, shown and raised in front of its tab group."""
    dock = window.docks[name]
    dock.show()
    dock.raise_()
    panel = dock.widget()
    qtbot.waitUntil(panel.is_shown, timeout=10000)
    return panel


def open_and_watch(qtbot, window, folder: Path, look) -> list:
    """Open `folder` and call `look()` inside context_changed once the new model's trace is there; its findings."""
    seen = []

    def on_context(_change) -> None:
        trace = window.session.trace
        if not seen and trace is not None and trace.model.name == window.controller.summary.name:
            seen.append(look())
    window.session.context_changed.connect(on_context)
    try:
        window.open_model(str(folder))
        idle(qtbot, window, lambda: bool(seen))
    finally:
        window.session.context_changed.disconnect(on_context)
    return seen


@contextmanager
def two_depths(qtbot, tmp_path, dialogs) -> Iterator[tuple[Any, Path, Path]]:
    """(window, five, two): a 1400x900 window with PROMPT typed, and two tiny Llamas of 5 and 2 layers (other
    seeds). On leaving, no warning may have been shown; the window is closed."""
    five, two = make_tiny_llama(tmp_path / "five", n_layers=5), make_tiny_llama(tmp_path / "two", seed=1, n_layers=2)
    window = new_window(qtbot, tmp_path)
    window.resize(1400, 900)
    try:
        window.prompt.set_text(PROMPT)
        yield window, five, two
        assert not dialogs["warnings"], dialogs["warnings"]
    finally:
        window.close()


@dataclass(frozen=True)
class Switch:
    """One model opened: the panel, the folders before (None for the first) and now, what `look(panel)` saw
    inside the switch's context_changed (None for the first), and the new model's trace."""

    panel: Any
    old: Path | None
    new: Path
    seen: dict | None
    trace: Any


def switches(qtbot, window, name: str, models, look: Callable[[Any], dict]) -> Iterator[Switch]:
    """Raise panel `name` and open each folder of `models` in turn; yield a Switch once each new trace is there.
    The first opens with no model before, so nothing is watched."""
    old = None
    for new in models:
        panel = raised(qtbot, window, name)
        if old is None:
            window.open_model(str(new))
            seen = None
        else:
            seen = open_and_watch(qtbot, window, new, lambda: look(panel))[0]
        trace = idle(qtbot, window, lambda: window.session.trace is not None)
        yield Switch(panel, old, new, seen, trace)
        old = new
