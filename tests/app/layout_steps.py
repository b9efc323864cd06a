"""The set-up the layout tests share: a new window on the emulated screen (tests/app/conftest.py's `screen`),
settled, taken through layout actions (View ▸ Reset Layout, Help ▸ Learn, a resize) one at a time, each
followed by the queued layouts and timers, and closed at the end whatever the test found."""
from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from tests.app.screen_fit import settle
from tests.app.stress_window import learn, reset_layout
from tests.app.window_helpers import new_window

__all__ = ["learn", "reset_layout", "opened_window", "then"]


@contextmanager
def opened_window(qtbot, tmp_path) -> Iterator:
    """A new window, shown and settled at its first size; closed when the block ends."""
    window = new_window(qtbot, tmp_path)
    try:
        settle(0.3)
        yield window
    finally:
        window.close()


def then(window, action: Callable) -> None:
    """`action(window)` (reset_layout, learn, a resize), and the layouts and timers it queued run."""
    action(window)
    settle(0.5)
