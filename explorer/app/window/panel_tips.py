"""One sentence of what each panel shows, for its dock's title bar and its tab, and the list of keys
and mouse gestures for Help ▸ Keyboard Shortcuts, read from the actions themselves.

A panel's sentence is its row's in panels.registry; a panel without one is described by the first
sentence of its class's docstring. The shortcuts are read from every QAction
the window holds (menus, toolbars, panels), so the list cannot drift from what the keys do; a mouse
gesture has no action, so the widget that implements it declares it (`gestures`, a tuple of
(gesture, what it does)) and the list reads that.
"""
from __future__ import annotations

import sys
from html import escape

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QTabBar

from explorer.app.panels import registry

# The prompt is no panel: its sentence is here; each panel's is its row's (panels.registry).
PROMPT_TIP = "The text the model reads: edit it, then Run (Ctrl+Enter) to prefill it."


# Qt's key codes from Key_Back on name the keys of remote controls and handhelds (Back, Exit, media keys):
# a platform may bind one (without a desktop theme Qt's Quit is the "Exit" key), but no keyboard here
# presses it, so the list leaves such a sequence out.
KEYBOARD_KEYS_BELOW = Qt.Key.Key_Back.value
# The word the README and the guide use where Qt's name differs: the main Enter key is Qt's "Return".
DOC_WORDS = {"Return": "Enter"}


def first_sentence(text: str | None) -> str:
    """The docstring's first sentence on one line (up to the first '. ')."""
    flat = " ".join((text or "").split())
    end = flat.find(". ")
    return flat if end < 0 else flat[:end + 1]


def panel_tip(object_name: str, panel_class=None) -> str:
    """The registry's sentence, else the panel class's docstring's first, else its module's."""
    if object_name == "prompt":
        return PROMPT_TIP
    spec = registry.spec(object_name)
    module = sys.modules.get(getattr(panel_class, "__module__", ""), None)
    return ((spec.tip if spec is not None else "") or first_sentence(getattr(panel_class, "__doc__", None))
            or first_sentence(getattr(module, "__doc__", None)))


def describe_tabs(window) -> None:
    """Give every dock tab of the window the tooltip of its dock (Qt names a tab by its title only).
    Qt rewrites a tab's tooltip only when its title changes, so this holds until a relayout."""
    tips = {dock.windowTitle(): dock.toolTip() for dock in window.docks.values() if dock.toolTip()}
    for bar in window.findChildren(QTabBar):
        if bar.parent() is not window:                  # the panels' own tab widgets describe their tabs
            continue
        for index in range(bar.count()):
            tip = tips.get(bar.tabText(index).replace("&", ""))
            if tip:
                bar.setTabToolTip(index, tip)


def shortcut_rows(window) -> list[tuple[str, str]]:
    """(what, keys) for every action of the window that has a shortcut, then every declared gesture."""
    actions = window.findChildren(QAction)
    for dock in window.docks.values():
        if getattr(dock, "built", True):
            actions += dock.widget().findChildren(QAction)
    rows, seen = [], set()
    for action in actions:
        keys = ", ".join(dict.fromkeys(key_words(s) for s in action.shortcuts() if pressable(s)))
        name = action.text().replace("&", "").rstrip("…").strip()
        if keys and name and (name, keys) not in seen:
            seen.add((name, keys))
            rows.append((name, keys))
    for source in [window, *window.docks.values(), *(d.panel_class for d in window.docks.values()
                                                      if getattr(d, "panel_class", None) is not None)]:
        for gesture, does in getattr(source, "gestures", ()):
            if (does, gesture) not in seen:
                seen.add((does, gesture))
                rows.append((does, gesture))
    return rows


def pressable(sequence: QKeySequence) -> bool:
    """Whether every key of the sequence is on a keyboard (no Exit key of a remote control)."""
    return all(sequence[i].key().value < KEYBOARD_KEYS_BELOW for i in range(sequence.count()))


def key_words(sequence: QKeySequence) -> str:
    """The sequence as the docs write it: "Ctrl+Enter", not Qt's "Ctrl+Return"."""
    text = sequence.toString(QKeySequence.SequenceFormat.NativeText)
    return "+".join(DOC_WORDS.get(part, part) for part in text.split("+"))


def shortcuts_html(window) -> str:
    table = "".join(f"<tr><td>{escape(n)}</td><td><b>{escape(k)}</b></td></tr>" for n, k in shortcut_rows(window))
    return (f"<table>{table}</table><p>Space and Backspace type in the prompt editor; "
            "click a panel first to step with them.</p>")
