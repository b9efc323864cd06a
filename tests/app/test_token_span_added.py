"""The Tokens table's span column says a token the tokenizer added covers no text: MiniLM's [SEP] at the end
of a text read "0–0", as if it stood at the text's first character. Checked against the tokenizers library's
own encoding: its special-tokens mask names the added tokens, and its offsets the characters of the others."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from tokenizers import Tokenizer

from explorer.app.widgets.token_table import TokenRows, TokenTableModel
from explorer.core import store
from explorer.core.tokens import TextTokenizer

TEXT = "The quick brown fox jumps."


def test_the_minilm_cls_and_sep_read_as_added_and_the_words_as_their_characters(qtbot):
    folder = store.pulled_path("minilm-l6")
    if folder is None:
        pytest.skip("minilm-l6 is not pulled")
    library = Tokenizer.from_file(str(Path(folder) / "tokenizer.json"))
    model = TokenTableModel()
    model.set_rows(TokenRows(TextTokenizer(library).encode(TEXT)))
    library.no_padding()                               # its tokenizer.json pads to 128 for a batch
    encoding = library.encode(TEXT, add_special_tokens=True)
    spans = [model.data(model.index(row, 3)) for row in range(model.rowCount())]
    assert len(spans) == len(encoding.ids) and sum(encoding.special_tokens_mask) == 2      # [CLS] ... [SEP]
    for cell, added, piece in zip(spans, encoding.special_tokens_mask, encoding.tokens):
        if added:
            assert not re.fullmatch(r"\d+–\d+", cell), (piece, cell)
            continue
        start, end = (int(v) for v in cell.split("–"))
        assert TEXT[start:end].lower() == piece.removeprefix("##"), (piece, cell)
    assert spans[0] == spans[-1]                       # [CLS] and [SEP] alike: both added, neither covers text
