"""Help ▸ Keyboard Shortcuts lists only keys a keyboard has, in the words of the guide's shortcut table.

On a bare X screen the list read "Quit — Ctrl+Q, Exit" (Qt's platform Quit is the Exit key of a remote
control) and "Run — Ctrl+Return" where the README and the guide say Ctrl+Enter.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from explorer.app.window.panel_tips import shortcut_rows, shortcuts_html
from tests.app.shared_window import make_window

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "guide.md"
MODIFIERS = {"Ctrl", "Shift", "Alt", "Meta"}
# The named keys of a PC keyboard, as the guide and Qt's native text write them.
NAMED_KEYS = {"Esc", "Tab", "Backspace", "Enter", "Ins", "Del", "Home", "End", "PgUp", "PgDown",
              "Left", "Up", "Right", "Down", "Space", "Print", "Pause", "Menu"}


def on_a_keyboard(key: str) -> bool:
    """A key printed on a PC keyboard: one character, F1–F12 or a named key."""
    return len(key) == 1 or key in NAMED_KEYS or re.fullmatch(r"F([1-9]|1[0-2])", key) is not None


def guide_shortcuts() -> dict[str, str]:
    """{keys: action} from the guide's "| Shortcut | Action |" table; "Ctrl+S / Ctrl+Shift+O" gives two rows."""
    rows, inside = {}, False
    for line in GUIDE.read_text(encoding="utf-8").splitlines():
        if line.startswith("| Shortcut |"):
            inside = True
        elif inside and line.startswith("|") and not line.startswith("|---"):
            keys, action = [cell.strip() for cell in line.strip("|").split("|")[:2]]
            for each in keys.split(" / "):
                rows[each] = action
        elif inside and not line.startswith("|"):
            break
    assert rows, f"{GUIDE} has no shortcut table"
    return rows


@pytest.fixture
def window(qtbot, tmp_path):
    window = make_window(qtbot, tmp_path)
    yield window
    window.close()


def test_every_listed_key_is_on_a_keyboard(window):
    listed = [(name, keys) for name, keys in shortcut_rows(window) if " " not in keys]   # a gesture has words
    assert listed, "the list has no key at all"
    for name, keys in listed:
        for sequence in keys.split(", "):
            parts = [part for part in sequence.split("+") if part not in MODIFIERS]
            assert parts and all(on_a_keyboard(part) for part in parts), \
                f"Help ▸ Keyboard Shortcuts lists {name!r} as {keys!r}: {sequence!r} is not on a keyboard"


def test_the_list_writes_the_guides_keys(window):
    """Every key of the guide's table is in the list as the guide writes it; Quit and Run read exactly so."""
    sequences = {sequence: name for name, keys in shortcut_rows(window) for sequence in keys.split(", ")}
    missing = {keys: action for keys, action in guide_shortcuts().items() if keys not in sequences}
    assert not missing, f"the guide's shortcuts not in Help ▸ Keyboard Shortcuts: {missing}"
    rows = dict(shortcut_rows(window))
    assert rows["Quit"] == "Ctrl+Q" and rows["Run"] == "Ctrl+Enter", rows
    assert "Ctrl+Enter" in shortcuts_html(window)


def test_a_quit_bound_to_the_exit_key_is_listed_by_ctrl_q_only(window):
    """A bare X server binds Qt's Quit to the Exit key as well: the list must not name it."""
    from PySide6.QtCore import Qt
    from PySide6.QtGui import QKeySequence

    quit_action = next(a for a in window.findChildren(type(window.menus.export_current)) if a.text() == "&Quit")
    quit_action.setShortcuts([QKeySequence("Ctrl+Q"), QKeySequence(Qt.Key.Key_Exit)])
    assert dict(shortcut_rows(window))["Quit"] == "Ctrl+Q"
