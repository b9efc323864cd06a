"""The Tokens panel draws the text exactly once: a character cut into several byte-level tokens (CJK,
emoji, a ZWJ family, combining marks) is drawn by one token, the others draw a byte marker, and
characters a vocabulary has no token for are drawn as dropped and named."""
from __future__ import annotations

import unicodedata
from pathlib import Path

import pytest
from PySide6.QtGui import QFontInfo, QTextDocument
from tokenizers import Tokenizer

from explorer.app.panels.tokens import TokensPanel
from explorer.app.state.session import Session
from explorer.core import store
from explorer.core.tokens import TextTokenizer
from explorer.views.token_text import TokenSpan, dropped_characters, text_pieces
from tests.app.shared_window import make

TEXTS = ("東京は日本の首都です。", "hi 😀 and 👍🏽!", "a family 👨\u200d👩\u200d👧\u200d👦 here",
         "cafe\u0301 n\u0303o Z\u0351\u0307a", "mixed 東京 😀\ne\u0301 end ",
         "two  spaces,\ta tab and\n\nlines")
BUNDLED = Path(__file__).resolve().parents[2] / "resources" / "models"


def bundled(name: str) -> TextTokenizer:
    return TextTokenizer(Tokenizer.from_file(str(BUNDLED / name / "tokenizer.json")))


def smollm2() -> TextTokenizer:
    from explorer.core.loaders.gguf import _tokenizer_metadata
    from explorer.core.loaders.gguf_tokenizer import tokenizer_from_gguf

    path = store.pulled_path("smollm2-135m")
    if path is None:
        pytest.skip("smollm2-135m is not pulled (python -m explorer pull smollm2-135m)")
    return tokenizer_from_gguf(_tokenizer_metadata(path), str(path))


def drawn_characters(document: QTextDocument) -> str:
    """The document's text without its markers (drawn smaller than the panel's font), blocks joined by newlines."""
    text_px = QFontInfo(document.defaultFont()).pixelSize()
    blocks, block = [], document.begin()
    while block.isValid():
        text, it = "", block.begin()
        while not it.atEnd():
            fragment = it.fragment()
            if QFontInfo(fragment.charFormat().font()).pixelSize() >= text_px:
                text += fragment.text()
            it += 1
        blocks.append(text)
        block = block.next()
    return "\n".join(blocks).replace("\u2028", "\n")


def not_read(text: str, read: str) -> str:
    """The characters of `text` left out of `read`, a subsequence of it."""
    left_out, j = "", 0
    for ch in text:
        if j < len(read) and read[j] == ch:
            j += 1
        else:
            left_out += ch
    assert j == len(read), f"{read!r} is not a subsequence of {text!r}"
    return left_out


def spans_of(tokens) -> list[TokenSpan]:
    return [TokenSpan(i, tokens.spans[i], tokens.text[i], tokens.raw[i]) for i in range(len(tokens))]


@pytest.mark.parametrize("text", TEXTS)
@pytest.mark.parametrize("name", ["shakespeare-gqa", "translate-en-zh"])
def test_bundled_tokenizers_draw_each_character_once(name, text):
    tokens = bundled(name).encode(text)
    pieces = text_pieces(spans_of(tokens), tokens.source)
    assert "".join(piece.text for piece in pieces) == text
    assert all(piece.text or piece.marker for piece in pieces)


@pytest.mark.realmodel
@pytest.mark.parametrize("text", TEXTS)
def test_smollm2_draws_each_character_once_and_marks_the_bytes_that_end_one(qtbot, text):
    tokens = smollm2().encode(text)
    assert text.isascii() or len(set(tokens.spans)) < len(tokens.spans), "a character is cut into several tokens"
    session = Session()
    panel = make(qtbot, session, TokensPanel)
    session.set_tokens(tokens)
    assert drawn_characters(panel.text_view.document()) == text
    # Every token is still a link of its own: the one that ends a character draws its bytes.
    html = panel.text_view.toHtml()
    assert all(f'"tok:{i}"' in html for i in range(len(tokens)))
    pieces = text_pieces(spans_of(tokens), tokens.source)
    marked = [p for p in pieces if p.marker]
    assert (marked or text.isascii()) and all(p.marker == tokens.raw[p.position].hex(" ").upper() for p in marked)
    assert b"".join(tokens.raw) == text.encode()           # the markers' bytes are the text's own


def test_the_minilm_wordpiece_tokenizer_draws_its_spaces_and_names_the_accent_it_strips():
    folder = store.pulled_path("minilm-l6")
    if folder is None:
        pytest.skip("minilm-l6 is not pulled")
    tokens = TextTokenizer(Tokenizer.from_file(str(Path(folder) / "tokenizer.json"))).encode(TEXTS[-1])
    pieces = text_pieces(spans_of(tokens), tokens.source)
    assert "".join(piece.text for piece in pieces) == TEXTS[-1]
    # An uncased BERT normaliser strips accents (NFD, then every Mn character goes): the model reads "e".
    assert dropped_characters(tokens.spans, tokens.source) == "".join(
        ch for ch in unicodedata.normalize("NFD", TEXTS[-1]) if unicodedata.category(ch) == "Mn")


def test_the_translator_names_the_characters_it_has_no_token_for(qtbot):
    text = "The quick brown fox"
    tokens = bundled("translate-en-zh").encode(text)
    read = bundled("translate-en-zh").decode(tokens.ids)         # what the model reads: a subsequence
    expected = not_read(text, read)
    assert dropped_characters(tokens.spans, tokens.source) == "Tqk" == expected
    session = Session()
    panel = make(qtbot, session, TokensPanel)
    session.set_tokens(tokens)
    assert panel.dropped.isVisible() and all(f" {ch}" in panel.dropped.text() for ch in "Tqk")
    assert drawn_characters(panel.text_view.document()) == text     # drawn, struck out, not cut
    session.set_tokens(bundled("translate-en-zh").encode("March 5, 2024"))
    assert not panel.dropped.isVisible()


def test_generated_tokens_follow_the_typed_text_in_full_size(qtbot):
    from types import SimpleNamespace

    import numpy as np

    from tests.app.synthetic_trace import build_trace

    trace = build_trace(prompt_len=4, steps=2)
    prompt = [str(t) for t in trace.token_text[:4]]
    starts = np.cumsum([0] + [len(t) for t in prompt])
    live = SimpleNamespace(ids=np.asarray(trace.token_ids[:4]), text=tuple(prompt),
                           spans=tuple((int(a), int(b)) for a, b in zip(starts[:-1], starts[1:])),
                           special=np.zeros(4, bool), raw=tuple(t.encode() for t in prompt), source="".join(prompt))
    session = Session()
    panel = make(qtbot, session, TokensPanel)
    session.set_tokens(live)
    session.set_trace(trace)
    generated = "".join(trace.token_text[4:])
    assert len(panel.rows) == trace.n_tokens and generated
    assert drawn_characters(panel.text_view.document()) == live.source + generated
    session.set_tokens(None)                           # a trace alone (an opened session): its display strings
    assert drawn_characters(panel.text_view.document()) == "".join(trace.token_text)
