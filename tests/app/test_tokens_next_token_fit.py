"""Tokens and Next token in the real window (issue 22): the logit lens keeps rows and its caption in sight at the
1366x768 launch layout, both panels' formulas can be read whole at the window's least size, and the Tokens table
starts at its first row after another model or run.

Seen: beside the Tokens panel's warning of characters the translator's tokenizer left out, the candidates showed
2 whole rows at 1366x768; after the translator, the logit lens in the Next token dock showed under 3 rows (its
table 98 px: header, sideways scroll bar, 64 px of 22 px rows) and its caption, one 393 px line in a 333 px
readout, was cut; Next token's formula lost its second line at the window's least size (20 px of the 36 it needs
at 216 px), cut at "ℝ⁴⁰⁹⁶," with nothing to say more followed; the Tokens
table of a model opened after another kept the other's scroll offset (108 of 108).

Expectation: the window's own geometry. A row is in sight when its visual rectangle lies inside the table's
viewport; a wrapped text is whole when it is as tall as its HTML laid out afresh at its width
(test_minimum_plots.whole_height), and readable when it is whole or what is drawn is a start of it ending in "…",
drawn within the widget, with the whole text in the tooltip; a one-line label is whole when its font's advance of
its text fits its width.
"""
from __future__ import annotations

import math

import pytest
from PySide6.QtCore import QRect

from tests.app.journey import BUNDLED, journey_in_a_window
from tests.app.screen_fit import SCREENS
from tests.app.test_minimum_plots import whole_height

pytestmark = pytest.mark.usefixtures("store_home")  # the store in the test's folder
PROMPT = "When Mary and John went to the store, John gave a drink to"
LONG_PROMPT = (PROMPT + " Mary. ") * 6          # a table that scrolls
ROWS_SEEN = 3


def rows_in_sight(table) -> int:
    """How many rows lie wholly inside the table's viewport."""
    view = table.viewport().rect()
    return sum(view.contains(table.visualRect(table.model().index(row, 0))) for row in range(table.rowCount()))


def one_line_whole(label) -> bool:
    return label.fontMetrics().horizontalAdvance(label.text()) <= label.contentsRect().width()


def cut_texts(*texts) -> dict:
    """The wrapped texts shorter than their whole text at their width: {text: (height, whole height)}."""
    return {text.text()[:60]: (text.height(), whole_height(text)) for text in texts
            if text.isVisible() and text.height() < whole_height(text)}


def unreadable(text) -> str:
    """Why a person cannot read all of a wrapped text ("" when it is whole, or drawn cut after a whole line with
    "…" and whole in its tooltip)."""
    if text.height() >= whole_height(text):
        return ""
    whole, drawn = text.document.toPlainText(), text.shown_document()
    start = drawn.toPlainText()
    if not start.endswith("…") or not whole.startswith(start[:-1].rstrip()):
        return f"is cut, drawn as {start!r}"
    if math.ceil(drawn.size().height()) > text.height() - 2 * text.PADDING[1]:
        return f"is drawn {drawn.size().height()} px tall in {text.height()} px"
    return "" if text.toolTip() == whole else f"is cut, its tooltip {text.toolTip()!r}"


def test_the_candidates_keep_three_rows_beside_the_tokens_warning(qtbot, tmp_path, monkeypatch):
    with journey_in_a_window(qtbot, tmp_path, monkeypatch, SCREENS["1366x768"]) as journey:
        journey.open(BUNDLED / "translate-en-zh", "The quick brown fox")      # T, q and k have no token
        tokens, panel = (journey.window.docks[name].widget() for name in ("tokens", "next_token"))
        assert tokens.dropped.isVisible() and "Left out" in tokens.dropped.text(), "no word of the left out"
        table = panel.table
        assert table.isVisible() and table.rowCount() >= ROWS_SEEN, table.rowCount()
        seen = rows_in_sight(table)
        assert seen >= ROWS_SEEN, f"the candidates show {seen} whole rows in {table.viewport().height()} px"


def test_the_logit_lens_keeps_three_rows_and_its_caption_at_1366x768(qtbot, tmp_path, monkeypatch):
    with journey_in_a_window(qtbot, tmp_path, monkeypatch, SCREENS["1366x768"]) as journey:
        journey.open(BUNDLED / "translate-en-zh", PROMPT)      # its Tokens grew, and kept, a larger share
        journey.open(BUNDLED / "shakespeare-gqa", PROMPT)
        panel = journey.raise_panel("next_token")
        journey.act("logit lens", panel.lens_button.click)
        table = panel.lens_table
        assert table.isVisible() and table.rowCount() == 4, table.rowCount()     # the model's 4 layers
        seen = rows_in_sight(table)
        assert seen >= ROWS_SEEN, f"the lens shows {seen} whole rows in {table.viewport().height()} px"
        assert "softmax(norm(h_l) W_U)" in panel.position_label.document.toPlainText()
        assert not cut_texts(panel.position_label, panel.header)
        assert "lens" in panel.readout.text() and one_line_whole(panel.readout), panel.readout.text()
        journey.act("back to the candidates", panel.lens_button.click)
        assert "branch" in panel.position_label.document.toPlainText(), "the candidates' caption did not come back"


@pytest.mark.parametrize("screen_name", list(SCREENS))
def test_the_formulas_are_readable_at_the_windows_least_size(qtbot, tmp_path, monkeypatch, screen_name):
    """Whole, or cut after a whole line with "…" drawn, and the whole formula in the tooltip."""
    with journey_in_a_window(qtbot, tmp_path, monkeypatch, SCREENS[screen_name]) as journey:
        window = journey.window
        journey.open(BUNDLED / "shakespeare-gqa", LONG_PROMPT)
        least = window.minimumSizeHint()
        journey.act(f"shrunk to {least.width()}x{least.height()}", lambda: window.resize(least))
        for name in ("tokens", "next_token"):
            panel = journey.raise_panel(name)
            journey.idle(f"{name} raised")
            assert panel.header.isVisible() and panel.formula
            problem = unreadable(panel.header)
            assert not problem, f"{name} at {window.width()}x{window.height()}: its formula {problem}"
        panel = window.docks["next_token"].widget()
        journey.act("logit lens", panel.lens_button.click)            # the window still fits (Journey.act)
        assert not cut_texts(panel.position_label) and not unreadable(panel.header)
        assert rows_in_sight(panel.lens_table) >= ROWS_SEEN


def top_row_in_sight(table) -> bool:
    first = table.visualRect(table.model().index(0, 0))
    return table.verticalScrollBar().value() == 0 and table.viewport().rect().contains(QRect(first))


def test_the_tokens_table_starts_at_the_top_after_a_switch_and_a_run(qtbot, tmp_path, monkeypatch):
    with journey_in_a_window(qtbot, tmp_path, monkeypatch, SCREENS["1366x768"]) as journey:
        window = journey.window
        journey.open(BUNDLED / "shakespeare-gqa", LONG_PROMPT)
        table = window.docks["tokens"].widget().table
        bar = table.verticalScrollBar()
        assert bar.maximum() > 0, "the prompt's table does not scroll"
        journey.act("scrolled to the end", lambda: bar.setValue(bar.maximum()))
        journey.open(BUNDLED / "shakespeare-mha", LONG_PROMPT)
        assert top_row_in_sight(table), f"after the switch the table starts at {bar.value()} of {bar.maximum()}"
        journey.act("scrolled down", lambda: bar.setValue(bar.maximum() // 2))
        offset = bar.value()
        journey.act("Step", window.actions.step.trigger)            # another step of the same run keeps the place
        assert bar.value() == offset, f"a step moved the table from {offset} to {bar.value()}"
        journey.type_and_run(" And")
        assert top_row_in_sight(table), f"after a new run the table starts at {bar.value()} of {bar.maximum()}"
