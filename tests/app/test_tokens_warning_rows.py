"""The translator's warning of the characters its tokenizer leaves out, over the Tokens table, leaves the table rows in
sight and the window on the screen (issue 22).

Seen: after a shrink to the window's least size and a regrow to 1366x768, the coloured text kept its lines over the
table and the table showed 2-3 rows under the translation line and the warning; and at the least size a prompt edit
on a ~60-token prompt had the window ask 769 px of a 768 px screen. Measured here at both emulated screens: the rows
the table's viewport holds (its height over a row's), the warning's height against its wrapped sentence, and the
window's asked sizes against the screen.
"""
from __future__ import annotations

import pytest
from PySide6.QtCore import QRect, Qt
from PySide6.QtGui import QFontMetrics

from tests.app.journey import BUNDLED, journey_in_a_window
from tests.app.screen_fit import SCREENS, fit_problems, settle
from tests.app.test_token_text import bundled, not_read

pytestmark = pytest.mark.usefixtures("store_home")  # the store in the test's folder

PROMPT = "The quick brown fox jumps over the lazy dog while the keeper watches quietly."   # ~60 tokens
ROWS_IN_SIGHT = 4            # fewer, and the table reads as a strip


def rows_in_sight(table) -> float:
    return table.viewport().height() / table.verticalHeader().defaultSectionSize()


def edit_prompt(journey, text: str) -> None:
    window = journey.window
    expected = len(window.controller.summary.tokenizer.encode(text).ids)
    window.prompt.set_text(text)
    journey.qtbot.waitUntil(lambda: window.session.tokens is not None and len(window.session.tokens.ids) == expected,
                            timeout=10000)
    journey.idle("the live tokens")
    settle(1.0)


def shrunk_and_edited(journey) -> None:
    """The translator on PROMPT, the window shrunk to its least size, the prompt edited there."""
    tokenizer = bundled("translate-en-zh")
    assert not_read(PROMPT, tokenizer.decode(tokenizer.encode(PROMPT).ids)), "the prompt leaves nothing out"
    journey.open(BUNDLED / "translate-en-zh", PROMPT)
    journey.raise_panel("tokens")
    journey.window.resize(journey.window.minimumSizeHint())
    settle(1.0)
    edit_prompt(journey, PROMPT + " Then")


@pytest.mark.parametrize("screen", list(SCREENS))
def test_a_prompt_edit_at_the_least_size_keeps_the_window_on_the_screen(qtbot, tmp_path, monkeypatch, screen):
    size = SCREENS[screen]
    with journey_in_a_window(qtbot, tmp_path, monkeypatch, size) as journey:
        shrunk_and_edited(journey)
        problems = fit_problems(journey.window, size, plots=False)
        assert not problems, f"{screen}, at the least size after a prompt edit: " + "; ".join(problems)


@pytest.mark.parametrize("screen", list(SCREENS))
def test_the_warning_leaves_the_table_its_rows_after_a_regrow(qtbot, tmp_path, monkeypatch, screen):
    size = SCREENS[screen]
    with journey_in_a_window(qtbot, tmp_path, monkeypatch, size) as journey:
        shrunk_and_edited(journey)
        window, panel = journey.window, journey.window.docks["tokens"].widget()
        window.resize(size)
        settle(1.0)
        warning = panel.dropped
        assert warning.isVisible()
        needed = QFontMetrics(warning.font()).boundingRect(
            QRect(0, 0, warning.width(), 10_000), int(Qt.TextFlag.TextWordWrap), warning.text()).height()
        assert warning.height() >= needed, f"{screen}: the warning is {warning.height()} px for a sentence of {needed}"
        rows = rows_in_sight(panel.table)
        assert rows >= ROWS_IN_SIGHT, f"{screen}: the table shows {rows:.1f} rows under the warning " \
                                      f"({panel.table.height()} px of the {window.docks['tokens'].height()} px dock)"
