"""A pasted book: 100,000 characters fill the token table's virtual model with every token, the coloured
text draws a bounded window of them, and the tokenizer's shortcuts agree with its full JSON."""
from __future__ import annotations

import json
import re
from types import SimpleNamespace

import numpy as np
import pytest
import transformers  # noqa: E402,F401  (the tiny model is written with it; missing, the run fails, never skips)
from PySide6.QtCore import QAbstractTableModel, Qt, QUrl
from PySide6.QtWidgets import QApplication

from explorer.app.panels.tokens import SPAN_WINDOW, TokensPanel
from explorer.app.state.session import Session
from explorer.core.tokens import TextTokenizer
from tests.app.shared_window import make, window_with_tiny_model

BOOK = ("To be, or not to be, that is the question:\nWhether 'tis nobler in the mind to suffer 😀 "
        "The slings and arrows of outrageous fortune, e\u0301 مرحبا\n")


@pytest.fixture(scope="module")
def dialogs():
    return {}


@pytest.fixture(scope="module")
def window(qapp, tmp_path_factory, dialogs):
    with window_with_tiny_model(qapp, tmp_path_factory.mktemp("paste"), dialogs) as window:
        yield window


def model_column(table, column: int) -> list[str]:
    model = table.model()
    return [model.data(model.index(row, column)) for row in range(model.rowCount())]


def test_a_pasted_hundred_thousand_characters_fill_the_token_model(qtbot, window, dialogs):
    text = (BOOK * (100_000 // len(BOOK) + 1))[:100_000]
    expected = window.controller.summary.tokenizer.encode(text)
    panel = window.docks["tokens"].widget()
    table = panel.table
    QApplication.clipboard().setText(text)
    window.prompt.setFocus()
    window.prompt.selectAll()
    window.prompt.paste()
    qtbot.waitUntil(lambda: table.model().rowCount() == len(expected.ids), timeout=60000)
    assert len(expected.ids) > 10_000
    assert isinstance(table.model(), QAbstractTableModel)
    assert [int(i) for i in model_column(table, 2)] == expected.ids.tolist()
    assert model_column(table, 0) == [str(i) for i in range(len(expected.ids))]
    start, end = expected.spans[-1]
    assert model_column(table, 3)[-1] == f"{start}–{end}" and end == 100_000
    assert window.session.tokens.source == text
    # The coloured text draws one window of tokens, not 20,000 anchors; its links page to the end.
    last = len(expected.ids) - 1
    html = panel.text_view.toHtml()
    assert len(set(re.findall(r'"tok:(\d+)"', html))) <= SPAN_WINDOW
    assert '"tok:0"' in html and f'"tok:{last}"' not in html
    panel.text_view.anchorClicked.emit(QUrl(f"window:{last}"))
    assert f'"tok:{last}"' in panel.text_view.toHtml() and panel.span_window.stop == last + 1
    assert not dialogs["warnings"]


def synthetic_tokens(n: int) -> SimpleNamespace:
    words = [f"w{i % 97}" for i in range(n)]
    source = "".join(words)
    starts = np.cumsum([0] + [len(w) for w in words[:-1]])
    return SimpleNamespace(ids=np.arange(n, dtype=np.int64) % 1000, text=tuple(words),
                           spans=tuple((int(s), int(s) + len(w)) for s, w in zip(starts, words)),
                           special=np.zeros(n, bool), raw=tuple(w.encode() for w in words), source=source)


def test_the_token_table_reads_its_cells_from_the_tokens_on_demand(qtbot):
    session = Session()
    panel = make(qtbot, session, TokensPanel)
    tokens = synthetic_tokens(100_000)
    session.set_tokens(tokens)
    model = panel.table.model()
    assert model.rowCount() == panel.table.rowCount() == 100_000 and model.columnCount() == 4
    for row in (0, 1, 54_321, 99_999):
        assert model.data(model.index(row, 2)) == str(int(tokens.ids[row]))
        assert model.data(model.index(row, 1)) == tokens.text[row]
        assert model.data(model.index(row, 3)) == "{}–{}".format(*tokens.spans[row])
        assert model.data(model.index(row, 1), Qt.ItemDataRole.ToolTipRole) == "bytes: " + tokens.raw[row].hex(" ")
    assert panel.table.item(54_321, 2).text() == str(int(tokens.ids[54_321]))
    assert model.headerData(1, Qt.Orientation.Horizontal) == "token"
    assert [row.token_id for row in panel.rows[10:13]] == tokens.ids[10:13].tolist()
    assert panel.span_window == range(0, SPAN_WINDOW)


def test_the_coloured_text_pages_through_a_long_text_and_follows_the_selection(qtbot):
    session = Session()
    panel = make(qtbot, session, TokensPanel)
    session.set_tokens(synthetic_tokens(10_000))
    html = panel.text_view.toHtml()
    assert html.count("tok:") == SPAN_WINDOW and f"window:{SPAN_WINDOW}" in html and "window:0" not in html
    panel.text_view.anchorClicked.emit(QUrl(f"window:{SPAN_WINDOW}"))            # "tokens 1,500–2,999 ▶"
    assert panel.span_window == range(SPAN_WINDOW, 2 * SPAN_WINDOW)
    assert "window:0" in panel.text_view.toHtml()
    panel.text_view.anchorClicked.emit(QUrl("tok:2000"))
    assert session.selection.token == 2000 and panel.span_window == range(SPAN_WINDOW, 2 * SPAN_WINDOW)
    session.select(token=9_990)                                                 # far away: the window moves
    assert 9_990 in panel.span_window and panel.span_window.stop == 10_000
    assert panel.table.selectionModel().isRowSelected(9_990)
    session.set_tokens(synthetic_tokens(3))                                     # a short text again: all of it
    session.select(token=None)
    assert panel.span_window == range(0, 3) and panel.text_view.toHtml().count("tok:") == 3


def _json_answers(tokenizer) -> tuple[str, set[int]]:
    """What TextTokenizer used to parse out of the whole tokenizer.json."""
    config = json.loads(tokenizer.to_str())
    blob = json.dumps([config.get("pre_tokenizer"), config.get("decoder")])
    kind = ("byte_level" if '"ByteLevel"' in blob else
            "wordpiece" if (config.get("model") or {}).get("type") == "WordPiece" else "sentencepiece")
    return kind, {t["id"] for t in config.get("added_tokens", []) if t.get("special")}


def _tokenizers():
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    corpus = [BOOK] * 8
    byte_level = Tokenizer(models.BPE())
    byte_level.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Digits(), pre_tokenizers.ByteLevel()])
    byte_level.decoder = decoders.ByteLevel()
    byte_level.train_from_iterator(corpus, trainers.BpeTrainer(
        vocab_size=300, special_tokens=["<|endoftext|>", "<|im_start|>"], show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    byte_level.add_tokens(["not-special"])
    wordpiece = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    wordpiece.pre_tokenizer = pre_tokenizers.Whitespace()
    wordpiece.train_from_iterator(corpus, trainers.WordPieceTrainer(
        vocab_size=200, special_tokens=["[UNK]", "[CLS]", "[SEP]"], show_progress=False))
    metaspace = Tokenizer(models.BPE(byte_fallback=True))
    metaspace.pre_tokenizer = pre_tokenizers.Metaspace()
    metaspace.decoder = decoders.Metaspace()
    metaspace.train_from_iterator(corpus, trainers.BpeTrainer(vocab_size=200, special_tokens=["<s>", "</s>"],
                                                              show_progress=False))
    return {"byte_level": byte_level, "wordpiece": wordpiece, "sentencepiece": metaspace}


@pytest.mark.parametrize("kind", ["byte_level", "wordpiece", "sentencepiece"])
def test_the_tokenizer_answers_what_its_json_says(kind):
    raw = _tokenizers()[kind]
    expected_kind, expected_special = _json_answers(raw)
    tokenizer = TextTokenizer(raw)
    assert tokenizer.kind == expected_kind == kind
    assert tokenizer._special_ids == expected_special and expected_special
    tokens = tokenizer.encode(BOOK * 3)
    assert tokens.text == tuple(tokenizer.display(i) for i in tokens.ids)       # the cache changes nothing
    assert tokens.raw == tuple(tokenizer.token_bytes(i) for i in tokens.ids)
    assert tokens.special.tolist() == [int(i) in expected_special for i in tokens.ids]


def test_a_decoding_step_inserts_its_row_and_widens_only_a_column_too_narrow_for_it(qtbot):
    from dataclasses import replace

    from explorer.core.trace import Trace
    from tests.app.synthetic_trace import build_trace

    session = Session()
    panel = make(qtbot, session, TokensPanel)
    panel.show()
    full = build_trace(prompt_len=4, steps=3)
    events = []
    model = panel.table.model()
    model.rowsInserted.connect(lambda *_: events.append("insert"))
    model.modelReset.connect(lambda *_: events.append("reset"))
    session.set_trace(Trace(model=full.model, steps=full.steps[:2]))
    assert events == ["reset"] and model.rowCount() == 5
    width = panel.table.columnWidth(1)
    session.set_trace(Trace(model=full.model, steps=full.steps[:3]))
    assert events == ["reset", "insert"] and model.rowCount() == 6
    assert panel.table.columnWidth(1) == width, "a token no wider than the column leaves it alone"
    wide = replace(full.steps[3], token_text=("a token far wider than any before it",))
    session.set_trace(Trace(model=full.model, steps=(*full.steps[:3], wide)))
    assert events == ["reset", "insert", "insert"] and model.data(model.index(6, 1)) == wide.token_text[0]
    assert panel.table.columnWidth(1) > width + 100
    session.set_trace(Trace(model=full.model, steps=full.steps[:2]))       # Back: rows go, the model resets
    assert events[-1] == "reset" and model.rowCount() == 5
