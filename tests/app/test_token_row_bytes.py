"""A generated token's row names the bytes its tokenizer gives, and says "bytes unknown" where no tokenizer is
known (issue 22). It read them back from the display string, which no reading can: core.tokens draws a space and
the character '␣' alike, and spells a special token's name, so a generated '␣' with no tokenizer named 20, a space,
not its own e2 90 a3. The expectations are UTF-8's and the display's own (core.tokens.bytes_to_display)."""
from __future__ import annotations

from PySide6.QtCore import Qt

from explorer.app.widgets.token_table import TokenRows, TokenTableModel
from explorer.core.tokens import bytes_to_display

SPACE_SIGN = "\u2423"                      # '␣', OPEN BOX: a character of its own, three bytes in UTF-8


def tooltip(rows: TokenRows, row: int) -> str:
    model = TokenTableModel()
    model.set_rows(rows)
    return model.data(model.index(row, 1), Qt.ItemDataRole.ToolTipRole)


def test_a_display_string_does_not_name_its_bytes():
    """Why the table cannot read bytes back: two tokens of different bytes are shown alike."""
    assert bytes_to_display(b" ") == bytes_to_display(SPACE_SIGN.encode()) == SPACE_SIGN


def test_a_generated_token_with_no_tokenizer_says_its_bytes_are_unknown(qtbot):
    rows = TokenRows(generated_ids=[7, 8], generated_text=[SPACE_SIGN, "<|im_end|>"])
    assert [rows[i].raw for i in range(2)] == [None, None]
    assert tooltip(rows, 0) == tooltip(rows, 1) == "bytes: bytes unknown"


def test_a_generated_token_names_the_bytes_its_tokenizer_gives(qtbot):
    vocabulary = {7: SPACE_SIGN.encode(), 8: b""}          # a token of the character itself, and a special one
    rows = TokenRows(generated_ids=[7, 8], generated_text=[SPACE_SIGN, "<|im_end|>"], token_bytes=vocabulary.get)
    assert tooltip(rows, 0) == "bytes: e2 90 a3"
    assert tooltip(rows, 1) == "bytes: (no bytes: special token)" and rows[1].special
